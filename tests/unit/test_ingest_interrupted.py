"""A Ctrl-C that lands while the embedding model's C extension loads stops the run (issue 44):
it came out as ImportError("initialization failed") from the KeyboardInterrupt, so the file was
recorded FAILED and the CLI printed a traceback instead of "interrupted" (test_ctrl_c[1.5])."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.ingest.local import ingest_bytes
from docchat.ingest.shelf import Shelf
from tests.conftest import WordEmbedder
from tests.pdfgen import make_pdf


class InterruptedWhileLoading(WordEmbedder):
    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> np.ndarray:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc


def test_a_ctrl_c_while_the_model_loads_stops_the_run_and_fails_no_file(tmp_path: Path) -> None:
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)

    with pytest.raises(KeyboardInterrupt):
        ingest_bytes(
            make_pdf([[("body", "Ferries leave the harbour every hour.")]]),
            source="/docs/ferries.pdf",
            shelf=Shelf(index, index, index),
            embedder=InterruptedWhileLoading(),
            settings=Settings(data_dir=tmp_path),
        )

    assert [r.status.value for r in index.documents()] != ["FAILED"]
    index.close()


def test_an_ingest_killed_after_its_record_is_settled_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a document indexed, and its new version killed after the record named it (before
    # the old version's chunks were removed: ingest/shelf.py's order)
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)
    shelf = Shelf(index, index, index)
    settings = Settings(data_dir=tmp_path)
    old = make_pdf([[("body", "Ferries leave the harbour every hour.")]])
    new = make_pdf([[("body", "Ferries leave the harbour every half hour.")]])
    ingest_bytes(
        old, source="/docs/ferries.pdf", shelf=shelf, embedder=WordEmbedder(), settings=settings
    )

    def killed(doc_id: str, version: str) -> dict[str, int]:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(index, "finalize_document", killed)
        with pytest.raises(KeyboardInterrupt):
            ingest_bytes(
                new,
                source="/docs/ferries.pdf",
                shelf=shelf,
                embedder=WordEmbedder(),
                settings=settings,
            )
    (record,) = index.documents()
    assert len({c.version for c in index.document_chunks(record.doc_id)}) == 2

    # When the file is ingested again
    again = ingest_bytes(
        new, source="/docs/ferries.pdf", shelf=shelf, embedder=WordEmbedder(), settings=settings
    )

    # Then it is unchanged, and only the new version's chunks are left
    assert again.outcome == "unchanged"
    assert {c.version for c in index.document_chunks(record.doc_id)} == {record.version}
    index.close()
