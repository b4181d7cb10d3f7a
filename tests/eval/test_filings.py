"""Amount questions over two companies' real 10-K filings (issue 28): the first quote is the
named company's table row holding the asked figure, under its header with the asked year.

The filings are not in ../shared/data today: the test looks in ../shared/data/filings (or the
folder DOCCHAT_FILINGS names) for AMAZON_2019_10K.pdf and BOEING_2019_10K.pdf, as FinanceBench
(patronus-ai/financebench, pdfs/) names them, and skips saying so when they are absent. The
figures are as printed in the filings' income statements."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.evaluate.qa import verbatim
from docchat.ingest.local import ingest_file
from docchat.ingest.shelf import Shelf
from docchat.search.library import Library
from docchat.search.rerank import SentenceReranker
from tests.chatkit import DEFAULTS, SEARCH
from tests.conftest import WordEmbedder
from tests.unit.test_table_quotes import _ask

FILINGS = Path(
    os.environ.get("DOCCHAT_FILINGS")
    or Path(__file__).resolve().parents[2].parent / "shared/data/filings"
)
NAMES = ("AMAZON_2019_10K.pdf", "BOEING_2019_10K.pdf")

pytestmark = pytest.mark.slow
if not all((FILINGS / name).is_file() for name in NAMES):
    pytest.skip(
        f"real filings not available: {', '.join(NAMES)} are not in {FILINGS} (set "
        "DOCCHAT_FILINGS to a folder holding FinanceBench's pdfs)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    folder = tmp_path_factory.mktemp("filings")
    settings = Settings(data_dir=folder)
    embedder = WordEmbedder()
    index = SqliteIndex(
        settings.index_path, embedding_model=embedder.model_id, dimension=embedder.dimension
    )
    for name in NAMES:
        result = ingest_file(
            FILINGS / name, shelf=Shelf(index, index, index), embedder=embedder, settings=settings
        )
        assert result.outcome == "indexed", result.record.error
    reranker = SentenceReranker(
        embedder, sentence_weight=DEFAULTS.sentence_weight, sentence_words=DEFAULTS.sentence_words
    )
    return Library(index=index, embedder=embedder, registry=index, reranker=reranker, **SEARCH)


@pytest.mark.parametrize(
    ("question", "company", "row", "figure"),
    [
        ("What were Amazon's total net sales in 2019?", "AMAZON.COM", "Total net sales", "280,522"),
        ("What was Boeing's net loss in 2019?", "BOEING COMPANY", "Net (loss)/earnings", "($636)"),
    ],
)
def test_an_amount_question_over_two_filings_quotes_the_companys_row(
    library: Library, question: str, company: str, row: str, figure: str
) -> None:
    # The filings' titles come from their covers and name their companies and periods
    titles = {r.title for r in library.documents()}
    assert titles == {
        "AMAZON.COM, INC. Form 10-K, fiscal year ended December 31, 2019",
        "THE BOEING COMPANY Form 10-K, fiscal year ended December 31, 2019",
    }

    text, citations = _ask(library, question)

    # The first row quoted is the named company's row holding the figure, its 2019 cell named
    rows = [c for c in citations if c.table_header]
    first = rows[0]
    assert company in first.title, citations
    assert first.quote.startswith(f"| {row} |") and f"| {figure} |" in first.quote
    assert any("2019" in line for line in first.table_header)
    assert f"(2019: {figure})" in text
    # and every quote is verbatim on the page it cites
    for cited in citations:
        chunks = library.pages(cited.doc_id, cited.page, cited.page)
        assert verbatim(cited.quote, "\n".join(c.text for c in chunks)), cited
