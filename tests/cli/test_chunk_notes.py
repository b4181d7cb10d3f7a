"""Model-written chunk context (DOCCHAT_CHUNK_CONTEXT=model), end to end through `docchat
ingest` and `docchat search`: the chat model is a local OpenAI-compatible server (Ollama's
shape) on 127.0.0.1, reached by the real adapter and the openai SDK.

The stand-in answers each Chat Completions request with a streamed body shaped as
tests/fixtures/openai/README.md documents (chunk objects with `delta.content`, a
`finish_reason`, then `choices: []` with `usage`; error bodies `{"error": {...}}`).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from docchat.config import Settings
from docchat.ingest.local import ingest_file
from docchat.ingest.notes import SYSTEM
from docchat.ingest.shelf import Shelf
from docchat.ingest.uploads import _Stage
from docchat.models import DocStatus
from docchat.wiring import chunk_notes
from docchat.wiring.local import local_embedder, open_index
from tests.cli.run import run_flat
from tests.pdfgen import make_pdf

FERRY = "The ferry leaves the north pier every hour, and the last one sails at midnight. " * 4
BRIDGE = "The bridge reopens on Monday after the repairs to its eastern span are done. " * 4
CLOSED = "The bridge stays closed for the winter while its eastern span is rebuilt. " * 4
# What the model answers for each passage: a word that is nowhere in the document itself.
NOTE_WORD = {"ferry": "quokka", "bridge": "wombat"}  # the first the passage has


class NotesModel:
    """A stand-in Ollama on 127.0.0.1: a note for each passage, or `fail_after` requests
    answered before it says the model is gone (Ollama's 404 body)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_after: int | None = None
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if model.fail_after is not None and len(model.requests) >= model.fail_after:
                    self.send_response(404)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    error = {
                        "message": 'model "qwen3:8b" not found, try pulling it first',
                        "type": "api_error",
                        "param": None,
                        "code": None,
                    }
                    self.wfile.write(json.dumps({"error": error}).encode())
                    return
                model.requests.append(body)
                passage = body["messages"][-1]["content"].split("<passage>")[1]
                word = next(w for key, w in NOTE_WORD.items() if key in passage)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for piece in (f"Ferries and bridges notice, the {word}", " section."):
                    self._chunk({"index": 0, "delta": {"content": piece}, "finish_reason": None})
                self._chunk({"index": 0, "delta": {}, "finish_reason": "stop"})
                self._send({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 7}})
                self.wfile.write(b"data: [DONE]\n\n")

            def _chunk(self, choice: dict[str, Any]) -> None:
                self._send({"choices": [choice]})

            def _send(self, fields: dict[str, Any]) -> None:
                chunk = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1763912000,
                    "model": "qwen3:8b",
                    **fields,
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def notes_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[NotesModel]:
    model = NotesModel()
    monkeypatch.setenv("DOCCHAT_CHUNK_CONTEXT", "model")
    monkeypatch.setenv("DOCCHAT_MODEL_PROVIDER", "openai")
    monkeypatch.setenv("DOCCHAT_OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("DOCCHAT_MODEL_ID", "qwen3:8b")
    monkeypatch.setenv("DOCCHAT_CHUNK_SIZE", "400")
    monkeypatch.setenv("DOCCHAT_CHUNK_OVERLAP", "0")
    yield model
    model.close()


@pytest.fixture
def notice(tmp_path: Path) -> Path:
    pdf = tmp_path / "notice.pdf"
    pdf.write_bytes(
        make_pdf([[("h1", "Ferries"), ("body", FERRY)], [("h1", "Bridges"), ("body", BRIDGE)]])
    )
    return pdf


def _chunks(capsys: pytest.CaptureFixture[str], data: Path) -> int:
    code, out, _ = run_flat(capsys, "status", "--json", "--data-dir", data)
    assert code == 0
    return sum(int(d["chunks"]) for d in json.loads(out)["documents"])


def _search(capsys: pytest.CaptureFixture[str], data: Path, query: str) -> list[dict[str, Any]]:
    code, out, err = run_flat(capsys, "search", query, "--json", "--data-dir", data)
    assert code == 0, err
    hits: list[dict[str, Any]] = json.loads(out)
    return hits


def test_each_chunk_is_found_by_its_model_written_note_and_quoted_as_its_page_text(
    notes_model: NotesModel, notice: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    code, out, err = run_flat(capsys, "ingest", notice, "--data-dir", data)
    assert code == 0, out + err

    # The model was asked once per chunk, with the document's start and the passage
    asked = notes_model.requests
    assert len(asked) >= 2
    for request in asked:
        assert request["messages"][0] == {"role": "system", "content": SYSTEM}
        prompt = request["messages"][-1]["content"]
        assert "The ferry leaves the north pier" in prompt.split("<passage>")[0]
        assert 'file="notice.pdf"' in prompt  # the document's file name
    # A word only the note has finds the chunk it was written for; the text stays the page's
    (hit, *_) = _search(capsys, data, "quokka")
    assert "ferry leaves the north pier" in hit["text"] and hit["page_start"] == 1
    assert "quokka" not in hit["text"]
    assert hit["note"] == "Ferries and bridges notice, the quokka section."
    (hit, *_) = _search(capsys, data, "wombat")
    assert "bridge reopens" in hit["text"] and hit["page_start"] == 2

    # A new version whose first page is unchanged: only the changed chunks are asked for
    count = len(asked)
    notice.write_bytes(
        make_pdf([[("h1", "Ferries"), ("body", FERRY)], [("h1", "Bridges"), ("body", CLOSED)]])
    )
    assert run_flat(capsys, "ingest", notice, "--data-dir", data)[0] == 0
    changed = notes_model.requests[count:]
    passages = [r["messages"][-1]["content"].split("<passage>")[1] for r in changed]
    assert passages and all("closed" in passage for passage in passages)
    assert _search(capsys, data, "quokka")[0]["page_start"] == 1

    # `rm` forgets the document's notes with it: ingested again, every chunk is asked again
    assert run_flat(capsys, "rm", notice, "--data-dir", data)[0] == 0
    before = len(notes_model.requests)
    assert run_flat(capsys, "ingest", notice, "--data-dir", data)[0] == 0
    assert len(notes_model.requests) - before == _chunks(capsys, data)


def test_a_model_failing_half_way_stops_ingestion_and_the_next_run_resumes(
    notes_model: NotesModel, notice: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    # Given a model that answers one request and is then gone
    notes_model.fail_after = 1
    code, _, err = run_flat(capsys, "ingest", notice, "--data-dir", data)

    # Then ingestion stops with the reason and what to do, and indexes nothing half-noted
    assert code == 2
    assert "could not write the chunk notes" in err and "not found" in err
    assert "adding the file again resumes" in err
    code, out, _ = run_flat(capsys, "status", "--json", "--data-dir", data)
    assert [d for d in json.loads(out)["documents"] if d["status"] == "INDEXED"] == []

    # When the model is back, only the notes not yet written are asked for
    notes_model.fail_after = None
    assert run_flat(capsys, "ingest", notice, "--data-dir", data)[0] == 0
    chunks = _chunks(capsys, data)
    assert chunks >= 2 and len(notes_model.requests) == chunks  # 1 before the failure
    assert _search(capsys, data, "quokka")[0]["page_start"] == 1


def test_notes_without_a_chat_model_are_refused_before_anything_is_read(
    monkeypatch: pytest.MonkeyPatch,
    notice: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DOCCHAT_CHUNK_CONTEXT", "model")
    monkeypatch.delenv("DOCCHAT_MODEL_PROVIDER", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("DOCCHAT_ANTHROPIC_API_KEY", raising=False)
    data = tmp_path / "data"
    code, _, err = run_flat(capsys, "ingest", notice, "--data-dir", data)
    assert code == 2
    assert "DOCCHAT_CHUNK_CONTEXT=model needs a chat model" in err
    assert "DOCCHAT_MODEL_PROVIDER" in err
    code, out, _ = run_flat(capsys, "status", "--json", "--data-dir", data)
    assert code != 0 or json.loads(out)["documents"] == []


def test_ingestion_reports_the_notes_as_a_stage_of_their_own(
    notes_model: NotesModel, notice: Path, tmp_path: Path
) -> None:
    # A laptop model takes seconds a note: the progress says notes are being written, and
    # how many, instead of a bar that stands still before embedding starts.
    settings = Settings.from_env(os.environ, data_dir=tmp_path / "data")
    embedder = local_embedder(settings)
    index = open_index(settings, embedder)
    seen: list[tuple[str, int, int]] = []
    try:
        result = ingest_file(
            notice,
            shelf=Shelf(index, index, index),
            embedder=embedder,
            settings=settings,
            on_progress=lambda stage, done, total: seen.append((stage, done, total)),
            notes=chunk_notes(settings, index),
        )
    finally:
        index.close()
    assert result.outcome == "indexed"
    notes = [(done, total) for stage, done, total in seen if stage == "notes"]
    chunks = result.record.chunks
    assert notes[0] == (0, chunks) and notes[-1] == (chunks, chunks)
    assert [done for done, _ in notes] == sorted(done for done, _ in notes)
    stages = [stage for stage, _, _ in seen]
    assert stages.index("notes") < stages.index("embed")
    # An upload's status says CHUNKING while its notes are written
    stage = _Stage(lambda status: None)
    stage.progress("notes", 1, 2)
    assert stage.status == DocStatus.CHUNKING
