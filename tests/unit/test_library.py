"""A chat sees only the registry's INDEXED version of each document, whatever the index holds.

OpenSearch Serverless shows deletions to searches only after a delay, so the index can still
hold chunks of a replaced version, of a removed document or of a failed run. Here the index
holds all three, written the way the pipeline writes (`write_chunks`, no finalize), and the
registry says which version is INDEXED.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.agent import Agent
from docchat.answer.events import ChatEvent, event_data
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.models import Chunk, DocStatus, DocumentRecord
from docchat.ports import Vectors
from docchat.search.catalog import Catalog
from docchat.search.library import Library
from tests.chatkit import SEARCH, ScriptedModel, tuned_config
from tests.conftest import WordEmbedder

OLD, NEW = "a" * 64, "b" * 64
TEXTS = {
    # (doc_id, version): the text of pages 1 and 2
    ("report", OLD): ["The bridge toll was five dollars in the old report.", "Old page two."],
    ("report", NEW): ["The bridge toll is seven dollars in the new report.", "New page two."],
    ("removed", "r" * 64): ["The bridge toll was nine dollars in a removed file.", "Gone."],
    ("failed", "f" * 64): ["The bridge toll was two dollars in a failed upload.", "Broken."],
}


def _chunks(doc_id: str, version: str) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"{doc_id}:{version[:12]}:{n:05d}",
            doc_id=doc_id,
            version=version,
            source=f"bucket/{doc_id}.pdf",
            title=doc_id.title(),
            headings=[],
            page_start=n + 1,
            page_end=n + 1,
            text=text,
        )
        for n, text in enumerate(TEXTS[doc_id, version])
    ]


NEW_IDS = {c.chunk_id for c in _chunks("report", NEW)}


@pytest.fixture
def index(tmp_path: Path) -> SqliteIndex:
    """Every version's chunks in the index; the registry: report INDEXED at NEW, failed FAILED,
    removed forgotten."""
    embedder = WordEmbedder()
    index = SqliteIndex(tmp_path / "i.sqlite3", embedding_model=embedder.model_id, dimension=64)
    for doc_id, version in TEXTS:
        chunks = _chunks(doc_id, version)
        index.write_chunks(chunks, embedder.embed_documents([c.text for c in chunks]))
    index.set_record(_record("report", NEW, DocStatus.INDEXED))
    index.set_record(_record("failed", "f" * 64, DocStatus.FAILED))
    return index


def _record(doc_id: str, version: str, status: DocStatus) -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc_id,
        source=f"bucket/{doc_id}.pdf",
        title=doc_id.title(),
        version=version,
        status=status,
        pages=2,
    )


def _library(index: Any, registry: SqliteIndex, **options: Any) -> Library:
    return Library(index=index, embedder=WordEmbedder(), registry=registry, **{**SEARCH, **options})


def test_library_search_returns_only_the_indexed_version(index: SqliteIndex) -> None:
    found = _library(index, index).search("bridge toll dollars", top_k=10)

    assert {p.chunk.chunk_id for p in found.passages} == NEW_IDS


def test_library_search_filters_inside_the_index_so_top_k_is_not_starved(
    index: SqliteIndex,
) -> None:
    # Given one candidate a side, and a query the stale chunks match best
    library = _library(index, index, candidates=1)

    # When searching
    found = library.search("toll was five dollars old removed failed upload", top_k=1)

    # Then the candidate is the indexed version's chunk, not a stale one dropped afterwards
    assert [p.chunk.chunk_id for p in found.passages] == ["report:bbbbbbbbbbbb:00000"]


class UnfilteredIndex:
    """An index whose search filters nothing (as OpenSearch's term filters let through the
    chunks of one version found under two documents): the library must still drop them."""

    def __init__(self, index: SqliteIndex) -> None:
        self.index = index

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        return self.index.vector_search(query, k=k)

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        return self.index.keyword_search(query, k=k)

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        return self.index.chunks(chunk_ids)

    def document_chunks(self, doc_id: str, *, version: str | None = None) -> list[Chunk]:
        return self.index.document_chunks(doc_id)


def test_library_drops_stale_chunks_an_index_let_through(index: SqliteIndex) -> None:
    library = _library(UnfilteredIndex(index), index)

    found = library.search("bridge toll dollars", top_k=10)
    pages = library.pages("report", 1, 2)

    assert {p.chunk.chunk_id for p in found.passages} == NEW_IDS
    assert {c.chunk_id for c in pages} == NEW_IDS


def test_library_reads_pages_of_the_indexed_version_only(index: SqliteIndex) -> None:
    library = _library(index, index)

    assert [c.text for c in library.pages("report", 1, 2)] == TEXTS["report", NEW]
    assert library.pages("failed", 1, 2) == []
    assert library.pages("removed", 1, 2) == []


def test_library_catalog_lists_indexed_documents_at_their_version(index: SqliteIndex) -> None:
    catalog = _library(index, index).catalog()

    assert catalog.versions() == {"report": NEW}
    assert catalog.versions(["failed", "report", "report"]) == {"report": NEW}
    assert Catalog.of([]).versions() == {}


def _events(library: Library, model: ScriptedModel) -> list[ChatEvent]:
    return list(
        Agent(library, model, tuned_config()).run(
            [{"role": "user", "content": "What is the toll?"}]
        )
    )


def test_chat_shows_and_cites_only_the_indexed_version(index: SqliteIndex) -> None:
    # Given a model that lists, searches and reads every document, then cites three passages
    reads = [
        ToolUse(f"r-{d}", "read_pages", {"doc_id": d, "first_page": 1, "last_page": 2})
        for d in ("report", "removed", "failed")
    ]
    model = ScriptedModel(
        [
            [
                ToolUse("l", "list_documents", {}),
                ToolUse("s", "search_documents", {"query": "bridge toll dollars"}),
                *reads,
                TurnEnd("tool_use"),
            ],
            [TextDelta("The toll is seven dollars [1], [2], [3]."), TurnEnd("end_turn")],
        ]
    )

    # When the chat runs
    events = _events(_library(index, index), model)

    # Then sources, tool results and citations come from the indexed version only
    shown = {
        p["chunk_id"] for e in events if e.type == "sources" for p in event_data(e)["passages"]
    }
    assert shown == NEW_IDS
    results = [r["content"] for r in model.calls[1]["messages"][-1]["content"]]
    assert results[0] == "- report: Report (file report.pdf, 2 pages, collections default)"
    assert all("seven" in text or "New page" in text for text in results[1:3])
    assert not any(word in "".join(results) for word in ("five", "nine", "two dollars"))
    assert results[3:] == [
        "Document removed has no text on pages 1-2.",
        "Document failed has no text on pages 1-2.",
    ]
    citations = event_data(next(e for e in events if e.type == "citations"))["citations"]
    assert {c["doc_id"] for c in citations} == {"report"}
    assert all(c["quote"] in " ".join(TEXTS["report", NEW]) for c in citations)


def test_chat_reads_the_registry_once_per_answer(index: SqliteIndex) -> None:
    class CountingRegistry:
        def __init__(self) -> None:
            self.reads = 0

        def documents(self) -> list[DocumentRecord]:
            self.reads += 1
            return index.documents()

        def document(self, doc_id: str) -> DocumentRecord | None:
            return index.document(doc_id)

        def revision(self) -> None:
            return None  # cannot tell when it changed (as DynamoDB)

    registry = CountingRegistry()
    library = Library(index=index, embedder=WordEmbedder(), registry=registry, **SEARCH)
    model = ScriptedModel(
        [
            [ToolUse("s", "search_documents", {"query": "toll"}), TurnEnd("tool_use")],
            [ToolUse("t", "search_documents", {"query": "bridge"}), TurnEnd("tool_use")],
            [TextDelta("Seven dollars [1]."), TurnEnd("end_turn")],
        ]
    )

    _events(library, model)

    assert registry.reads == 1
