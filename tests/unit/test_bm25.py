"""BM25 of the embedded index: FTS5's analysis and scores, from numpy postings."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.adapters.sqlite_index.bm25 import STOPWORDS, Tokenizer, best_rows
from docchat.models import Chunk, DocumentRecord
from tests.conftest import WordEmbedder

# (doc id, title, headings, text): lengths, repeats, stems, accents and digits differ.
CHUNKS = [
    ("a", "Cell biology", ["Membranes"], "Cells divide. A cell membrane protects the cell."),
    ("a", "Cell biology", ["Division"], "Mitosis: one cell becomes two daughter cells."),
    (
        "a",
        "Cell biology",
        ["Energy"],
        "Mitochondria make energy for the cell; ATP is the currency.",
    ),
    ("b", "Solar power", ["Panels"], "Solar panels convert sunlight into electricity."),
    ("b", "Solar power", ["Panels", "Cells"], "Photovoltaic cells in a panel; solar cell output."),
    ("b", "Solar power", [], "Section 1201(a) of the café rules: panels on the roof."),
    ("c", "Café guide", ["Menu"], "The cafe serves coffee, tea and cake every morning."),
    ("c", "Café guide", ["Energy"], "Coffee gives energy. Energy drinks give more energy."),
    ("c", "Café guide", ["Roof"], "The roof terrace is open in summer when the sun shines."),
]
QUERIES = [
    "cell",
    "How do cells make energy?",
    "Cells cell CELL membrane",
    "solar panel electricity",
    "café roof",
    "cafe",
    "1201 a",
    "energy coffee sun",
    "what is the",  # function words only: kept, since nothing else is left
    "unknownword",
]


def _fts5_reference(tmp_path: Path, query: str) -> list[tuple[int, float]]:
    """What SQLite FTS5's bm25() ranks for the query's words joined by OR: (row, score)."""
    db = sqlite3.connect(tmp_path / "fts5.sqlite3")
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS t USING fts5"
        " (file, title, headings, text, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    if not db.execute("SELECT count(*) FROM t").fetchone()[0]:
        # The file name (/docs/<doc id>.pdf) is context too: its own column.
        db.executemany(
            "INSERT INTO t (rowid, file, title, headings, text) VALUES (?, ?, ?, ?, ?)",
            [(n, doc, title, " ".join(h), text) for n, (doc, title, h, text) in enumerate(CHUNKS)],
        )
    words = query.replace("?", " ").replace("(", " ").replace(")", " ").split()
    content = [w for w in words if w.casefold() not in STOPWORDS] or words
    match = " OR ".join(f'"{w}"' for w in dict.fromkeys(content))
    rows = db.execute(
        "SELECT rowid, bm25(t, 2.0, 2.0, 3.0, 1.0) AS r FROM t WHERE t MATCH ? ORDER BY r, rowid",
        (match,),
    ).fetchall()
    db.close()
    return [(row, -score) for row, score in rows]


@pytest.fixture
def index(tmp_path: Path) -> SqliteIndex:
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)
    for doc_id in ("a", "b", "c"):
        rows = [(n, c) for n, c in enumerate(CHUNKS) if c[0] == doc_id]
        chunks = [
            Chunk(
                chunk_id=f"row{n}",
                doc_id=doc_id,
                version="v1",
                source=f"/docs/{doc_id}.pdf",
                title=title,
                headings=headings,
                page_start=1,
                page_end=1,
                text=text,
            )
            for n, (_, title, headings, text) in rows
        ]
        record = DocumentRecord(doc_id=doc_id, source=f"/docs/{doc_id}.pdf", version="v1")
        vectors = WordEmbedder().embed_documents([c.text for c in chunks])
        index.replace_document(record, chunks, vectors)
    return index


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_ranks_and_scores_as_fts5_does(index: SqliteIndex, tmp_path: Path, query: str) -> None:
    expected = _fts5_reference(tmp_path, query)

    hits = index.keyword_search(query, k=len(CHUNKS))

    assert [chunk_id for chunk_id, _ in hits] == [f"row{row}" for row, _ in expected]
    assert [score for _, score in hits] == pytest.approx([s for _, s in expected], rel=1e-5)


def test_bm25_top_k_within_documents_is_the_head_of_the_full_ranking(index: SqliteIndex) -> None:
    full = index.keyword_search("cells energy panel", k=len(CHUNKS))
    in_b_and_c = [hit for hit in full if hit[0] in {"row3", "row4", "row5", "row6", "row7", "row8"}]

    assert index.keyword_search("cells energy panel", k=2) == full[:2]
    assert index.keyword_search("cells energy panel", k=2, doc_ids=["b", "c"]) == in_b_and_c[:2]
    assert index.keyword_search("cells energy panel", k=5, doc_ids=["nope"]) == []


def test_bm25_forgets_a_replaced_version_and_sees_other_writers(
    index: SqliteIndex, tmp_path: Path
) -> None:
    assert [hit for hit, _ in index.keyword_search("mitochondria", k=5)] == ["row2"]
    other = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)
    chunk = Chunk(
        chunk_id="a-v2",
        doc_id="a",
        version="v2",
        source="/docs/a.pdf",
        title="Cell biology",
        headings=[],
        page_start=1,
        page_end=1,
        text="Ribosomes build proteins.",
    )
    record = DocumentRecord(doc_id="a", source="/docs/a.pdf", version="v2")
    other.replace_document(record, [chunk], WordEmbedder().embed_documents([chunk.text]))

    assert index.keyword_search("mitochondria", k=5) == []
    assert [hit for hit, _ in index.keyword_search("ribosome", k=5)] == ["a-v2"]


def test_tokenizer_weighs_file_name_title_and_headings_and_counts_tokens() -> None:
    [(frequencies, length)] = Tokenizer().analyse(
        [("biology-notes", "Cells", "Cell division", "Cells split.")]
    )

    # file name x2, title x2, heading x3, text x1; porter stems "cells" and "division"
    assert frequencies == {
        "biologi": 2.0,
        "note": 2.0,
        "cell": 2.0 + 3.0 + 1.0,
        "divis": 3.0,
        "split": 1.0,
    }
    assert length == 7


def test_tokenizer_drops_function_words_unless_nothing_else_is_left() -> None:
    tokenizer = Tokenizer()

    assert tokenizer.query_terms("What are the Cells of the café?") == ["cell", "cafe"]
    assert tokenizer.query_terms("what is the") == ["what", "is", "the"]
    assert tokenizer.query_terms("?!") == []


def test_best_rows_breaks_ties_by_row() -> None:
    scores = np.array([1.0, 3.0, 3.0, 2.0, 3.0])
    rows = np.arange(5)

    assert best_rows(scores, rows, 2).tolist() == [1, 2]
    assert best_rows(scores, rows, 4).tolist() == [1, 2, 4, 3]
    assert best_rows(scores, np.array([0, 3, 4]), 2).tolist() == [4, 3]
    assert best_rows(scores, rows, 0).tolist() == []


def test_tokenizer_recovers_from_a_failed_call() -> None:
    tokenizer = Tokenizer()
    with pytest.raises(sqlite3.Error):
        # the first row goes in, the second has a field too many
        tokenizer.analyse([("f", "t", "h", "pears"), ("f", "t", "h", "x", "y")])  # type: ignore[list-item]

    assert tokenizer.analyse([("", "", "", "apples")]) == [({"appl": 1.0}, 1)]
