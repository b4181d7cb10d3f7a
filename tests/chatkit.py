"""Shared by the chat tests: a scripted model and a two-document library."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import pytest
import uvicorn

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.agent import AgentConfig
from docchat.answer.backend import ChatBackend
from docchat.answer.events import SourcePassage
from docchat.config import Settings
from docchat.errors import ModelUnavailableError
from docchat.ingest.shelf import Shelf
from docchat.ingest.uploads import LocalUploads
from docchat.llm import Message, ModelEvent, ToolSpec
from docchat.models import Chunk, DocStatus, DocumentRecord
from docchat.search.library import Library
from docchat.wiring import agent_config
from tests.conftest import WordEmbedder

# The product's tuned settings (docchat.config.Settings), for tests that do not vary them.
DEFAULTS = Settings()
SEARCH: dict[str, Any] = {
    "candidates": DEFAULTS.candidates,
    "fusion": DEFAULTS.fusion,
    "vector_weight": DEFAULTS.vector_weight,
}


def tuned_config(**changes: Any) -> AgentConfig:
    """The agent settings the product runs with, with `changes`."""
    return replace(agent_config(DEFAULTS, index_sleeps=True), **changes)


PAGES = {
    "bridges": [
        "The old bridge was closed in 1998 after an inspection found cracks.",
        "A new bridge opened in 2004; it carries four lanes and a cycle path.",
    ],
    "ferries": ["The ferry to the island leaves every hour from the north pier."],
}
# A passage as a `sources` event carries it.
PASSAGE = SourcePassage(
    number=1,
    chunk_id="bridges:0",
    doc_id="bridges",
    title="Bridges",
    source="bridges.pdf",
    page_start=1,
    page_end=2,
    headings=["History"],
    text=PAGES["bridges"][1],
)


class ScriptedModel:
    """Plays back one list of events per turn and records what it was sent."""

    model_id = "scripted"

    def __init__(
        self, turns: list[list[ModelEvent]], *, fail_after: int | None = None, pause: float = 0.0
    ) -> None:
        self.turns = turns
        self.calls: list[dict[str, Any]] = []
        self.fail_after = fail_after
        self.pause = pause  # seconds between events, to watch streaming happen
        self.finished_at: float | None = None
        self.closed: list[int] = []  # the calls whose stream was closed before its end

    def stream(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> Iterator[ModelEvent]:
        self.calls.append({"messages": [dict(m) for m in messages], "tools": list(tools)})
        turn = self.turns[min(len(self.calls), len(self.turns)) - 1]
        try:
            for n, event in enumerate(turn):
                if self.fail_after is not None and n == self.fail_after:
                    raise ModelUnavailableError("the model is overloaded: try again shortly")
                time.sleep(self.pause)
                yield event
        except GeneratorExit:
            self.closed.append(len(self.calls))
            raise
        self.finished_at = time.monotonic()


def library_of(path: Path, documents: dict[str, list[str]]) -> Library:
    """A library at `path` holding each document (id -> its pages' texts) as one indexed chunk."""
    embedder = WordEmbedder()
    index = SqliteIndex(path, embedding_model=embedder.model_id, dimension=64)
    for doc_id, pages in documents.items():
        text = "\n".join(pages)
        starts = [sum(len(page) + 1 for page in pages[:n]) for n in range(1, len(pages))]
        chunk = Chunk(
            chunk_id=f"{doc_id}:0",
            doc_id=doc_id,
            version="v",
            source=f"{doc_id}.pdf",
            title=doc_id.title(),
            headings=[],
            page_start=1,
            page_end=len(pages),
            page_breaks=starts,
            text=text,
        )
        record = DocumentRecord(
            doc_id=doc_id,
            source=f"{doc_id}.pdf",
            title=doc_id.title(),
            version="v",
            pages=len(pages),
            status=DocStatus.INDEXED,
        )
        index.replace_document(record, [chunk], embedder.embed_documents([text]))
    return Library(index=index, embedder=embedder, registry=index, **SEARCH)


@pytest.fixture
def library(tmp_path: Path) -> Library:
    return library_of(tmp_path / "i.sqlite3", PAGES)


@dataclass
class LocalParts:
    index: SqliteIndex
    uploads: LocalUploads
    backend: ChatBackend


def local_parts(settings: Settings) -> LocalParts:
    """What `docchat serve` wires over `settings.data_dir`, with the word embedder: the SQLite
    index (also the registry), direct uploads and extractive answers."""
    embedder = WordEmbedder()
    index = SqliteIndex(settings.index_path, embedding_model=embedder.model_id, dimension=64)
    uploads = LocalUploads(shelf=Shelf(index, index, index), embedder=embedder, settings=settings)
    library = Library(index=index, embedder=embedder, registry=index, page_store=index, **SEARCH)
    backend = ChatBackend(library=library, model=None, config=tuned_config())
    return LocalParts(index, uploads, backend)


class ServedApp:
    """An ASGI app under a real uvicorn in a thread, on a free port of 127.0.0.1."""

    def __init__(self, app: Any, *, lifespan: Literal["on", "off"] = "off") -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan=lifespan
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
