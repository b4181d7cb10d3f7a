"""Questions whose evidence is a page of a named document (FinanceBench's open-source JSONL):
whether the search finds the document and the page among its first k passages, and whether
the extractive answer quotes the asked figure where the evidence page prints it.

The documents are those of a data directory, as `docchat ingest` indexed them, each found by
its file's stem (FinanceBench's `doc_name`, e.g. "3M_2018_10K" for 3M_2018_10K.pdf). A
question about a document that is not indexed is counted apart, never as a miss.

"Figures": the amounts of the expected answer ("$1577.00", "65.4%", "1,577") that the
evidence text prints (digits compared without separators and trailing zero cents), so a ratio
the question asks to compute is not held against the quote; a figure is quoted when a quote of
the answer holds it as a number, and found when one of the first k passages of the document
prints it (what a reader or a model answering from those passages could quote).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from docchat.errors import EvaluationDataError
from docchat.evaluate.lines import json_lines
from docchat.evaluate.qa import verbatim
from docchat.models import Citation, Passage


class _Evidence(BaseModel):
    model_config = ConfigDict(extra="ignore")

    evidence_text: str = ""
    evidence_page_num: int  # 0-based, as FinanceBench numbers its pages


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question: str
    doc_name: str
    answer: str = ""
    evidence: list[_Evidence]
    financebench_id: str = ""


@dataclass(frozen=True)
class PageQuestion:
    qid: str
    question: str
    document: str  # the file's stem
    pages: frozenset[int]  # 1-based, as docchat cites them
    figures: frozenset[str]  # the answer's amounts that the evidence prints, as digits


@dataclass(frozen=True)
class PageOutcome:
    question: PageQuestion
    indexed: bool
    right_document: bool = False
    page_hit: bool = False
    figure_found: bool = False
    figure_quoted: bool = False
    quotes: int = 0  # the answer's quotes
    faithful: int = 0  # of them, those verbatim on the pages they cite


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def numbers(text: str) -> set[str]:
    """The numbers in `text` as digits: "1,577" and "$1577.00" are both "1577"; "65.40" is
    "65.4"; a number of one digit says too little to count, and a year (1900-2099 written
    without a separator) is a date, not an amount."""
    found = set()
    for match in _NUMBER.finditer(text):
        digits = match.group().replace(",", "")
        if "." in digits:
            digits = digits.rstrip("0").rstrip(".")
        year = match.group().isdigit() and 1900 <= int(match.group()) < 2100
        if len(digits.replace(".", "")) > 1 and not year:
            found.add(digits)
    return found


def load_pages(path: Path, *, limit: int | None = None) -> list[PageQuestion]:
    """The questions of a FinanceBench-style JSONL file (one object a line); `limit` keeps the
    first ones."""
    rows = json_lines(
        path,
        _Row,
        what='a question with its evidence as FinanceBench writes them: {"question": …, '
        '"doc_name": …, "answer": …, "evidence": [{"evidence_page_num": …, "evidence_text": …}]}',
    )
    questions = []
    for number, row in enumerate(rows, start=1):
        printed = set().union(*(numbers(e.evidence_text) for e in row.evidence))
        questions.append(
            PageQuestion(
                qid=row.financebench_id or f"question {number}",
                question=row.question,
                document=row.doc_name,
                pages=frozenset(e.evidence_page_num + 1 for e in row.evidence),
                figures=frozenset(numbers(row.answer) & printed),
            )
        )
    if limit is not None:
        questions = questions[:limit]
    if not questions:
        raise EvaluationDataError(f"{path} has no questions")
    return questions


def evaluate_pages(
    questions: Sequence[PageQuestion],
    *,
    doc_ids: dict[str, str],
    search: Callable[[str], list[Passage]],
    answer: Callable[[str], list[Citation]],
    page_text: Callable[[str, int, int], str],
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> list[PageOutcome]:
    """Each question's outcome over the indexed documents (`doc_ids`: file stem -> doc id):
    `search` gives the first k passages, `answer` the extractive answer's citations, and
    `page_text` a document's pages first..last as extracted."""
    outcomes = []
    for done, q in enumerate(questions, start=1):
        doc_id = doc_ids.get(q.document)
        if doc_id is None:
            outcomes.append(PageOutcome(q, indexed=False))
        else:
            found = [p.chunk for p in search(q.question) if p.chunk.doc_id == doc_id]
            cited = answer(q.question)
            quoted = set().union(*(numbers(c.quote) for c in cited))
            outcomes.append(
                PageOutcome(
                    q,
                    indexed=True,
                    right_document=bool(found),
                    page_hit=any(
                        c.page_start <= page <= c.page_end for c in found for page in q.pages
                    ),
                    figure_found=bool(q.figures & set().union(*(numbers(c.text) for c in found))),
                    figure_quoted=bool(q.figures & quoted),
                    quotes=len(cited),
                    faithful=sum(
                        verbatim(c.quote, page_text(c.doc_id, c.page, c.page_end or c.page))
                        for c in cited
                    ),
                )
            )
        on_progress(done, len(questions))
    return outcomes


#: The rows of `page_scores` that are counts, not shares.
COUNTS = ("questions", "figures on page")


def page_scores(outcomes: Sequence[PageOutcome], *, k: int) -> dict[str, float]:
    """The shares over the questions whose document is indexed (figures: over those whose
    evidence prints a figure of the answer), and how many there were."""
    asked = [o for o in outcomes if o.indexed]
    with_figures = [o for o in asked if o.question.figures]
    return {
        "questions": float(len(asked)),
        f"document@{k}": _share(o.right_document for o in asked),
        f"page-hit@{k}": _share(o.page_hit for o in asked),
        "figures on page": float(len(with_figures)),
        f"figure@{k}": _share(o.figure_found for o in with_figures),
        "figure quoted": _share(o.figure_quoted for o in with_figures),
        "fidelity": _fidelity(asked),
    }


def _fidelity(outcomes: Sequence[PageOutcome]) -> float:
    quotes = sum(o.quotes for o in outcomes)
    return sum(o.faithful for o in outcomes) / quotes if quotes else 1.0


def _share(hits: Iterable[bool]) -> float:
    seen = list(hits)
    return sum(seen) / len(seen) if seen else 0.0
