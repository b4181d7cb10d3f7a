"""The catalog a search needs: kept while the registry is unchanged, and names found in a
question through an index of their first words, exactly as by trying every name in turn."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.models import Chunk, DocStatus, DocumentRecord
from docchat.search.catalog import Catalog
from docchat.search.library import Library
from tests.chatkit import SEARCH
from tests.conftest import WordEmbedder


def _every_name_in_turn(catalog: Catalog, query: str) -> tuple[list[str], str]:
    """Catalog.named_in as it was written before its names were indexed: each name tried."""

    def folded(text: str) -> str:
        return re.sub(r"[\W_]+", " ", text.casefold()).strip()

    rest = f" {folded(query)} "
    found: list[tuple[int, str]] = []
    for doc_id, record in catalog.records.items():
        for name in (record.title, Path(record.source).name):
            key = f" {folded(name)} "
            if len(key.split()) >= 2 and key in rest:
                found.append((rest.index(key), doc_id))
                rest = rest.replace(key, " ")
    return [doc_id for _, doc_id in sorted(found)], rest.strip()


def _catalog(titles: list[str]) -> Catalog:
    return Catalog.of(
        DocumentRecord(
            doc_id=f"d{n}", source=f"/docs/{title[:6]}.pdf", title=title, status=DocStatus.INDEXED
        )
        for n, title in enumerate(titles)
    )


WORDS = st.sampled_from(["annual", "report", "tax", "form", "2007", "a", "b", "pdf", "of"])


@given(
    titles=st.lists(st.lists(WORDS, min_size=1, max_size=4).map(" ".join), max_size=8),
    query=st.lists(WORDS, max_size=12).map(" ".join),
)
def test_named_in_finds_what_trying_every_name_finds(titles: list[str], query: str) -> None:
    catalog = _catalog(titles)

    assert catalog.named_in(query) == _every_name_in_turn(catalog, query)


def test_named_in_tries_a_name_that_an_earlier_match_brought_together() -> None:
    # "a b" is spelled out only once "x y" is taken out of "a x y b"
    catalog = _catalog(["x y", "a b"])

    assert catalog.named_in("a x y b") == (["d1", "d0"], "")
    assert catalog.named_in("a x y b") == _every_name_in_turn(catalog, "a x y b")


def _library(tmp_path: Path) -> tuple[SqliteIndex, Library, list[int]]:
    embedder = WordEmbedder()
    index = SqliteIndex(tmp_path / "i.sqlite3", embedding_model=embedder.model_id, dimension=64)
    reads: list[int] = []
    documents = index.documents

    def counted() -> list[DocumentRecord]:
        reads.append(1)
        return documents()

    index.documents = counted  # type: ignore[method-assign]
    library = Library(index=index, embedder=embedder, registry=index, **SEARCH)
    return index, library, reads


def _add(index: SqliteIndex, doc_id: str, text: str) -> None:
    chunk = Chunk(
        chunk_id=f"{doc_id}:0",
        doc_id=doc_id,
        version="v",
        source=f"/docs/{doc_id}.pdf",
        title=doc_id.title(),
        headings=[],
        page_start=1,
        page_end=1,
        text=text,
    )
    record = DocumentRecord(doc_id=doc_id, source=chunk.source, title=chunk.title, version="v")
    index.replace_document(record, [chunk], WordEmbedder().embed_documents([text]))


def test_library_reads_the_registry_again_only_after_a_write(tmp_path: Path) -> None:
    index, library, reads = _library(tmp_path)
    _add(index, "ferry", "The ferry leaves at noon.")

    for _ in range(3):
        assert [p.chunk.doc_id for p in library.search("ferry", top_k=2).passages] == ["ferry"]
    assert len(reads) == 1

    _add(index, "train", "The train leaves at dawn.")
    assert [p.chunk.doc_id for p in library.search("train dawn", top_k=1).passages] == ["train"]
    assert library.search("train", top_k=1).passages
    assert len(reads) == 2

    # A write by another connection to the file is seen too
    other = SqliteIndex(index.path, embedding_model="test-words", dimension=64)
    _add(other, "bus", "The bus leaves at dusk.")
    assert [p.chunk.doc_id for p in library.search("bus dusk", top_k=1).passages] == ["bus"]
    assert len(reads) == 3
    other.close()
    index.close()


@pytest.mark.parametrize("query", ["annual report of 2007 tax form", "nothing named"])
def test_named_in_keeps_the_order_the_query_names_documents_in(query: str) -> None:
    catalog = _catalog(["tax form", "annual report"])

    assert catalog.named_in(query) == _every_name_in_turn(catalog, query)


@pytest.mark.parametrize("name", ["AMEX", "AmEx", "American Express"])
def test_a_company_is_named_by_the_heads_of_its_names_words(name: str) -> None:
    # FinanceBench asks "Does AMEX have an improving operating margin profile as of 2022?":
    # before, no document was named and PepsiCo's, AMD's and Lockheed's pages answered.
    catalog = _catalog(
        [
            "American Express Company (AXP) Form 10-K, fiscal year ended December 31, 2022",
            "American Airlines Group Inc. (AAL) Form 10-K, fiscal year ended December 31, 2022",
            "PepsiCo, Inc. (PEP) Form 10-K, fiscal year ended December 31, 2022",
        ]
    )

    named, _ = catalog.named_in(f"Does {name} have an improving operating margin profile?")

    assert named == ["d0"]
