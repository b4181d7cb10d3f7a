"""`docchat eval pages`: FinanceBench-style questions (a document, its evidence pages, the
answer) over a data directory that `docchat ingest` filled, with the real offline embedder."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from docchat.cli import main
from docchat.evaluate.pages import load_pages, numbers
from tests.conftest import EXAMPLES, page_texts, squash

DMCA = EXAMPLES / "dmca.pdf"


def _row(question: str, doc: str, page: int, answer: str, evidence: str) -> str:
    """A line as FinanceBench's open-source JSONL has it (pages 0-based, more fields beside)."""
    return json.dumps(
        {
            "financebench_id": f"q-{doc}-{page}",
            "company": "Congress",
            "doc_name": doc,
            "question_type": "domain-relevant",
            "question": question,
            "answer": answer,
            "justification": "",
            "evidence": [
                {
                    "evidence_text": evidence,
                    "doc_name": doc,
                    "evidence_page_num": page - 1,
                    "evidence_text_full_page": evidence,
                }
            ],
        }
    )


def test_numbers_are_compared_as_digits() -> None:
    assert numbers("$1577.00 and 1,577 and (1,577)") == {"1577"}
    assert numbers("65.40% of 7 cars in 2019, 2,019 of them red") == {"65.4", "2019"}
    assert numbers("In 2022 it was") == set()  # a year is a date, not an amount


def test_eval_pages_counts_the_evidence_page_and_the_quoted_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given dmca.pdf indexed, and questions about it and about a filing that is not
    folder = tmp_path / "pdfs"
    folder.mkdir()
    shutil.copy(DMCA, folder / "dmca.pdf")
    data = tmp_path / "data"
    assert main(["ingest", "--data-dir", str(data), str(folder)]) == 0
    page3 = (
        "New section 1201 implements the obligation to provide adequate and effective protection"
    )
    assert squash(page3) in page_texts(DMCA)[2]  # FinanceBench's evidence: the page's own text
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "\n".join(
            [
                _row(
                    "Which new section of Title 17 implements the protection against "
                    "circumvention of technological measures?",
                    "dmca",
                    3,
                    "Section 1201",
                    page3,
                ),
                _row("What were 3M's 2018 net sales?", "3M_2018_10K", 40, "$32,765", "32,765"),
            ]
        )
        + "\n"
    )
    assert [q.figures for q in load_pages(questions)] == [{"1201"}, {"32765"}]
    capsys.readouterr()

    # When it is evaluated
    scores = tmp_path / "scores.json"
    code = main(["eval", "pages", "--data-dir", str(data), str(questions), "--json", str(scores)])

    # Then the DMCA question finds its document and page and quotes the section's number; the
    # filing that is not indexed is said and left out
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(scores.read_text())
    assert result["scores"] == {
        "questions": 1.0,
        "document@5": 1.0,
        "page-hit@5": 1.0,
        "figures on page": 1.0,
        "figure@5": 1.0,
        "figure quoted": 1.0,
        "fidelity": 1.0,
    }
    [dmca, filing] = result["questions"]
    assert dmca["page_hit"] and dmca["figure_found"] and dmca["figure_quoted"]
    assert dmca["pages"] == [3]
    assert filing["indexed"] is False
    assert "not indexed here" in err and "3M_2018_10K" in err
    assert "page-hit@5" in out
    assert re.search(r"│ questions\s*│\s*1 │", out)  # a count, not 1.0000
    assert re.search(r"│ fidelity\s*│\s*1\.0000 │", out)


def test_eval_pages_refuses_a_line_that_is_not_a_question(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"question": "What?", "doc_name": "x"}\n')

    assert main(["eval", "pages", "--data-dir", str(tmp_path), str(questions)]) == 2
