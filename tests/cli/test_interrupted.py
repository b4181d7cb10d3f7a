"""Work a killed server left unfinished resumes when the server starts again (issue 12, item 5):
a real `docchat serve`, killed with SIGKILL while it embeds an upload, then started again.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.sandbox import DOCCHAT, env, free_port
from tests.pdfgen import make_pdf


class Serve:
    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [str(DOCCHAT), "serve", "--data-dir", str(data_dir), "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**env(), "DOCCHAT_EMBED_BATCH_SIZE": "1"},  # progress after every chunk
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.process.communicate()
            try:
                self.http.get("/documents/none")
                return
            except httpx.TransportError:
                assert time.monotonic() < deadline, "docchat serve did not start"
                time.sleep(0.1)

    def status(self, doc_id: str) -> dict[str, Any]:
        record: dict[str, Any] = self.http.get(f"/documents/{doc_id}").json()
        return record

    def end(self, *, kill: bool) -> None:
        self.http.close()
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        self.process.communicate(timeout=30)


def _status(data_dir: Path) -> dict[str, Any]:
    result = subprocess.run(
        [str(DOCCHAT), "status", "--json", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env=env(),
        timeout=120,
        check=True,
    )
    documents: dict[str, Any] = {d["doc_id"]: d for d in json.loads(result.stdout)["documents"]}
    return documents


@pytest.mark.slow
def test_an_upload_killed_while_embedding_resumes_when_the_server_starts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    words = [f"{a}{b}" for a in ("ba", "ko", "mi", "ru", "te") for b in ("dal", "nor", "ves")]
    pdf = make_pdf(
        [
            [
                ("body", " ".join(words[(p * 7 + n * 3 + k) % 15] for k in range(12)) + ".")
                for n in range(30)
            ]
            for p in range(40)
        ]
    )

    # Given a server killed (SIGKILL) while it embeds an upload
    server = Serve(data)
    try:
        response = server.http.post(
            "/documents",
            params={"filename": "timetable.pdf"},
            content=pdf,
            headers={"content-type": "application/pdf"},
        )
        assert response.status_code == 202, response.text
        doc_id = response.json()["doc_id"]
        deadline = time.monotonic() + 120
        while (seen := server.status(doc_id)["status"]) != "EMBEDDING":
            assert seen in ("QUEUED", "CONVERTING") and time.monotonic() < deadline, seen
            time.sleep(0.02)
    finally:
        server.end(kill=True)

    left = _status(data)[doc_id]

    # When the server starts again, and only the document itself is asked for
    server = Serve(data)
    try:
        deadline = time.monotonic() + 180
        while (record := server.status(doc_id))["status"] != "INDEXED":
            assert record["status"] != "FAILED", record
            assert time.monotonic() < deadline, f"still {record['status']} after a restart"
            time.sleep(0.2)
    finally:
        server.end(kill=False)

    # Then `docchat status` had said the work was interrupted and who resumes it
    assert left["status"] == "EMBEDDING" and left.get("interrupted") is True
    # And the document is whole now: indexed, every page, no longer interrupted
    assert record["pages"] == 40 and record["chunks"] > 40
    assert _status(data)[doc_id]["interrupted"] is False
