"""Uploads keep their own names and never take each other's place (issue 12, item 1).

A real uvicorn on 127.0.0.1 over a temporary data directory, real SQLite, real files.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docchat.config import Settings
from docchat.models import DocStatus
from docchat.serve.app import create_app
from tests.chatkit import ServedApp, local_parts
from tests.pdfgen import make_pdf


def _pdf(text: str) -> bytes:
    return make_pdf([[("h1", "Notice"), ("body", text)]])


class Served:
    """docchat's app with direct uploads, served on loopback over `data_dir`."""

    def __init__(self, data_dir: Path) -> None:
        self.settings = Settings(data_dir=data_dir)
        parts = local_parts(self.settings)
        self.index, self.uploads, backend = parts.index, parts.uploads, parts.backend
        self.app = ServedApp(create_app(lambda: backend, uploads=lambda _: self.uploads))
        self.app.start()
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.app.port}", timeout=30)

    def post(self, name: str, body: bytes) -> dict[str, Any]:
        response = self.http.post(
            "/documents",
            params={"filename": name},
            content=body,
            headers={"content-type": "application/pdf"},
        )
        assert response.status_code == 202, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def wait(self, doc_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while True:
            record: dict[str, Any] = self.http.get(f"/documents/{doc_id}").json()
            if record.get("status") in (DocStatus.INDEXED, DocStatus.FAILED):
                return record
            assert time.monotonic() < deadline, record
            time.sleep(0.05)

    def documents(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.http.get("/documents").json()["documents"]
        return listed

    def close(self) -> None:
        self.http.close()
        self.app.stop()
        self.uploads.close()
        self.index.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path / "data")
    yield server
    server.close()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("契約書.pdf", "報告書.pdf"),
        ("Résumé final.pdf", "Resume-final.pdf"),
        (".pdf", "....pdf"),
        ("Übersicht.pdf", "Ubersicht.pdf"),
    ],
)
def test_two_uploads_with_different_names_stay_two_documents(
    served: Served, first: str, second: str
) -> None:
    # Given two different PDFs uploaded under two different names
    a = served.post(first, _pdf("The lease ends in March."))
    b = served.post(second, _pdf("The audit found no errors."))

    # Then both are indexed, each under its own id and its own name
    assert a["doc_id"] != b["doc_id"]
    assert served.wait(a["doc_id"])["status"] == "INDEXED"
    assert served.wait(b["doc_id"])["status"] == "INDEXED"
    names = sorted(Path(d["source"]).name for d in served.documents())
    assert names == sorted([first, second])
    texts = {c.text for c in served.index.document_chunks(a["doc_id"])}
    assert texts == {"The lease ends in March."}


def test_the_same_name_again_is_the_next_revision_of_that_document(served: Served) -> None:
    first = served.post("契約書.pdf", _pdf("The lease ends in March."))
    served.wait(first["doc_id"])

    # When new bytes arrive under the same name
    second = served.post("契約書.pdf", _pdf("The lease ends in June."))

    # Then it is the same document, visibly replaced: revision 2 of it, one document left
    assert second["doc_id"] == first["doc_id"]
    assert (first["revision"], second["revision"]) == (1, 2)
    assert served.wait(second["doc_id"])["revision"] == 2
    assert len(served.documents()) == 1
    chunks = served.index.document_chunks(first["doc_id"])
    assert [c.text for c in chunks] == ["The lease ends in June."]


# Pieces of names: any character, and the ones that make trouble on disks and in paths.
PIECES = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(["/", "\\", ".", "..", "\x00", " ", "CON", "nul", "契", "é", "e\u0301"]),
)
NAMES = st.lists(PIECES, max_size=500).map(lambda parts: "".join(parts)[:996] + ".pdf")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(NAMES, min_size=2, max_size=6, unique_by=lambda n: _nfc(n)))
def test_fuzzed_upload_names_never_collide_nor_leave_the_folder(names: list[str]) -> None:
    from docchat.ingest.uploads import display_name, upload_key, upload_path

    folder = Path("/data/uploads")
    paths = [folder / upload_path(name) for name in names]
    # Different names (as a user sees them: NFC) never share a file, a folder or a document
    assert len({p.parent for p in paths}) == len(names)
    for name, path in zip(names, paths, strict=True):
        assert path.parent.parent == folder
        assert path.name not in ("", ".", "..") and "\x00" not in path.name
        assert len(path.name.encode()) <= 200 and len(path.parent.name) == 32
        assert path.name == display_name(name) and path.parent.name == upload_key(name)


@pytest.mark.slow
def test_fuzzed_upload_names_through_the_server_stay_apart_inside_the_data_dir(
    tmp_path: Path,
) -> None:
    server = Served(tmp_path / "data")
    try:
        seen: dict[str, str] = {}
        sent = [0]  # every upload's bytes differ: identical bytes are one document by design

        @settings(max_examples=40, deadline=None, database=None)
        @given(name=NAMES.filter(lambda n: len(n) < 255))
        def upload(name: str) -> None:
            sent[0] += 1
            answer = server.post(name, _pdf(f"Document number {sent[0]}."))
            key = _nfc(name)
            if key in seen:
                assert answer["doc_id"] == seen[key]
            else:
                assert answer["doc_id"] not in seen.values(), (name, answer)
                seen[key] = answer["doc_id"]

        upload()
        server.uploads.close()
        data = (tmp_path / "data").resolve()
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert all(p.resolve().is_relative_to(data) for p in files)
        assert not [p for p in files if p.name.endswith(".partial")]
        indexed = {d.doc_id for d in server.index.documents()}
        assert set(seen.values()) <= indexed, "an upload was lost"
    finally:
        server.close()


def _nfc(name: str) -> str:
    return unicodedata.normalize("NFC", name)
