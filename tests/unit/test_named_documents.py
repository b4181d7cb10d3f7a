"""A question that names a document by its title or file name is about that document.

The page suggests "What is “2007 Instruction 1040-NR” about?" for each indexed document. Every
chunk carries the title, so BM25 ranked the shortest chunks first (rows of a tax table), which
hold no sentence to quote: the extractive answer said that nothing matches.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.agent import NOT_FOUND, ExtractiveAnswerer
from docchat.answer.events import CitationsEvent, DeltaEvent
from docchat.models import Chunk, DocStatus, DocumentRecord
from docchat.search.library import Library
from tests.chatkit import SEARCH, tuned_config
from tests.conftest import WordEmbedder

DMCA = "The Digital Millennium Copyright Act of 1998"
DOCUMENTS = {
    ("irs", "2007 Instruction 1040-NR", "i1040nr.pdf"): [
        "Instructions for Form 1040NR. Use Form 1040NR if you were a nonresident alien.",
        "Who must file. File Form 1040NR if you were engaged in a trade or business.",
        "When to file. A return for the 2007 calendar year is due by April 15, 2008.",
        "6,000 9,000 12,000",
        "61,000 64,000",
    ],
    ("dmca", DMCA, "dmca.pdf"): [
        "The DMCA was signed into law on October 28, 1998. It implements two WIPO treaties.",
        "Section 512(b) limits the liability of service providers for system caching.",
        "Section 1201 divides technological measures into two categories.",
    ],
}


@pytest.fixture
def library(tmp_path: Path) -> Library:
    embedder = WordEmbedder()
    index = SqliteIndex(tmp_path / "i.sqlite3", embedding_model=embedder.model_id, dimension=64)
    for (doc_id, title, source), texts in DOCUMENTS.items():
        chunks = [
            Chunk(
                chunk_id=f"{doc_id}:v:{n:05d}",
                doc_id=doc_id,
                version="v",
                source=source,
                title=title,
                headings=[],
                page_start=n + 1,
                page_end=n + 1,
                text=text,
            )
            for n, text in enumerate(texts)
        ]
        record = DocumentRecord(
            doc_id=doc_id,
            source=source,
            title=title,
            version="v",
            pages=len(texts),
            status=DocStatus.INDEXED,
        )
        index.replace_document(record, chunks, embedder.embed_documents(texts))
    return Library(index=index, embedder=embedder, registry=index, **SEARCH)


def _pages(library: Library, query: str, **options: object) -> list[tuple[str, int]]:
    found = library.search(query, top_k=3, **options).passages  # type: ignore[arg-type]
    return [(p.chunk.doc_id, p.chunk.page_start) for p in found]


def test_what_a_named_document_is_about_is_where_it_begins(library: Library) -> None:
    assert _pages(library, "What is “2007 Instruction 1040-NR” about?") == [
        ("irs", 1),
        ("irs", 2),
        ("irs", 3),
    ]


def test_two_named_documents_are_opened_in_turn(library: Library) -> None:
    found = _pages(
        library,
        f"How do “{DMCA}” and “2007 Instruction 1040-NR” differ?",
    )

    assert found == [("dmca", 1), ("irs", 1), ("dmca", 2)]


def test_a_question_naming_a_file_searches_that_file_for_the_rest(library: Library) -> None:
    assert _pages(library, "what does dmca.pdf say about caching")[0] == ("dmca", 2)
    assert {d for d, _ in _pages(library, "when is 2007 instruction 1040-nr due")} == {"irs"}


def test_a_name_outside_the_chats_documents_is_only_words(library: Library) -> None:
    found = _pages(library, "What is “2007 Instruction 1040-NR” about?", doc_ids=["dmca"])

    assert {d for d, _ in found} <= {"dmca"}


def test_one_word_is_not_a_document_name(library: Library) -> None:
    named, _ = library.catalog().named_in("what is dmca about")

    assert named == []


def test_extractive_answer_to_what_a_document_is_about_quotes_its_opening(
    library: Library,
) -> None:
    events = list(
        ExtractiveAnswerer(library, tuned_config()).run(
            [
                {
                    "role": "user",
                    "content": "What is “The Digital Millennium Copyright Act of 1998” about?",
                }
            ]
        )
    )

    text = "".join(e.text for e in events if isinstance(e, DeltaEvent))
    [cited] = [e for e in events if isinstance(e, CitationsEvent)]
    assert NOT_FOUND not in text
    assert cited.citations[0].page == 1 and cited.citations[0].doc_id == "dmca"
