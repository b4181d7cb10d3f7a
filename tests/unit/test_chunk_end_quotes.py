"""A quote whose sentence a chunk's end cuts short goes on in the chunk after it
(docchat.answer.continued), on a real document chunked with the settings' sizes: a paper on
individual differential privacy from pdfminer.six's samples (../shared/data/pdfs), whose
abstract's last sentence the first chunk ends in ("… which results in less")."""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.answer.continued import ends_cut, finished
from docchat.answer.extractive import Quote
from docchat.evaluate.qa import verbatim
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.convert.pdf import pages_from_pdf
from docchat.models import Chunk, Page
from docchat.search.sentences import chunk_sentences
from tests.conftest import EXAMPLES, SHARED_PDFS
from tests.unit.test_table_quotes import DEFAULTS, _ask, _library

PAPER = SHARED_PDFS / "pdfminer.six-samples" / "samples" / "contrib"
PAPER = PAPER / "issue-1061-colour-space-stack.pdf"
TITLE = "Individual Differential Privacy"


@pytest.fixture(scope="module")
def pages() -> list[Page]:
    if not PAPER.is_file():
        pytest.skip(f"{PAPER} is not here (../shared/data)")
    return pages_from_pdf(PAPER.read_bytes()).pages


def test_a_sentence_cut_at_a_chunks_end_is_quoted_to_its_full_stop(
    tmp_path: Path, pages: list[Page]
) -> None:
    # Given the paper, indexed with chunks that share no text (DOCCHAT_CHUNK_OVERLAP=0): the
    # second chunk opens with the rest of that sentence, "distortion and more …"
    library = _library(tmp_path, {"idp": pages}, titles={"idp": TITLE}, chunk_overlap=0)

    # When a question asks what the abstract's last sentence answers
    text, citations = _ask(
        library, "What does the new notion allow the data controller to adjust the distortion to?"
    )

    # Then that sentence is quoted to its full stop, not cut with "…", word for word on its page
    cited = next(c for c in citations if "allows the data controller" in c.quote)
    assert cited.quote.endswith("less distortion and more analytical accuracy."), cited.quote
    assert f"{cited.quote}” [" in text
    page = next(p.markdown for p in pages if p.number == cited.page)
    assert cited.page_end is None and verbatim(cited.quote, page)


def test_the_rest_is_found_past_the_text_two_chunks_share(pages: list[Page]) -> None:
    # Given the paper chunked with the settings' overlap, so that the second chunk repeats the
    # end of the first before it goes on
    chunks = _chunked(pages, "idp")
    first, second = chunks[1], chunks[2]
    last = chunk_sentences(first)[-1]
    assert last.text.endswith("which results in less") and ends_cut(first)
    quote = Quote(1, last, last.text, 1.0, 1.0, last)

    # When its quote is finished from the next chunk
    [whole] = finished([quote], {first.chunk_id: second})

    # Then it ends at the sentence's full stop, ending with the second chunk's sentence
    assert whole.text == (
        "This new notion allows the data controller to adjust the distortion to the actual "
        "data set, which results in less distortion and more analytical accuracy."
    )
    assert whole.last.chunk is second and not whole.partial


def test_a_heading_that_ends_a_chunk_is_not_joined_to_the_next_sentence() -> None:
    # Given the DMCA summary (examples/pdfs), one of whose chunks ends with a heading line long
    # enough to look cut ("Assumption of Contractual Obligations … in Motion Pictures") and the
    # next repeats it before the section's first sentence
    chunks = _chunked(pages_from_pdf((EXAMPLES / "dmca.pdf").read_bytes()).pages, "dmca")
    cut = [c for c in chunks if ends_cut(c)]
    heading = next(c for c in cut if c.text.endswith("Rights in Motion Pictures"))
    after = next(c for c in chunks if c.chunk_id == heading.following_id)
    last = chunk_sentences(heading)[-1]
    quote = Quote(1, last, last.text, 1.0, 1.0, last)

    # When its quote is finished from the next chunk
    [kept] = finished([quote], {heading.chunk_id: after})

    # Then it stays as it was: the next chunk opens a sentence of its own
    assert kept == quote
    assert after.text.startswith(f"{last.text}\nSection 416")


def _chunked(pages: list[Page], doc_id: str) -> list[Chunk]:
    return chunks_from_pages(
        pages,
        doc_id=doc_id,
        version="v",
        source=f"{doc_id}.pdf",
        title=doc_id,
        chunk_size=DEFAULTS.chunk_size,
        chunk_overlap=DEFAULTS.chunk_overlap,
    )
