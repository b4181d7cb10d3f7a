"""Office files through `docchat ingest`, `ask` and `text`: a folder of Word, PowerPoint and
Excel files is indexed, the encrypted, corrupt and macro-bearing ones beside them fail with
their reasons, and answers cite the section, slide and sheet with verbatim quotes (a table
row with its header)."""

from __future__ import annotations

import json

import pytest

from docchat.cli import main
from tests.cli.run import run
from tests.officegen import office_folder


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    folder = tmp_path_factory.mktemp("office")
    expected = office_folder(folder / "files")
    data = str(folder / "data")
    main(["ingest", str(folder / "files"), "--data-dir", data])
    return data, expected


def test_a_folder_ingest_indexes_every_readable_file_and_fails_the_others_with_reasons(
    indexed: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    data, expected = indexed

    code, out, err = run(capsys, "status", "--json", "--data-dir", data)

    assert code == 0, err
    records = {r["file_name"]: r for r in json.loads(out)["documents"]}
    outcomes = {
        name: "indexed" if r["status"] == "INDEXED" else r["error_code"]
        for name, r in records.items()
    }
    assert outcomes == expected
    assert "remove the password" in records["locked.docx"]["error"]
    assert records["macros.pptm"]["error"].startswith("'macros.pptm' contains macros")
    assert "and ingest that" in records["macros.pptm"]["error"]


@pytest.mark.parametrize(
    ("question", "doc", "label", "quote", "header"),
    [
        (
            "What revenue and growth did Region 2 have?",
            "report.docx",
            "Section: Chapter 1 > Scope 1",
            "| Region 2 | 2,000 | 2% |",
            ["| Region | Revenue | Growth |"],
        ),
        (
            "How many units did Region 2 sell and what revenue?",
            "book.xlsx",
            "Sheet 'Revenue' A1:E4",
            "| Region 2 | 20 | $2,469.00 | 2.0% | 2024-01-01 |",
            ["| Region | Units | Revenue | Growth | Date |"],
        ),
        (
            "In which quarter did revenue grow, quarter 2?",
            "deck.pptx",
            "Slide 2: Quarterly results 2",
            "- Revenue grew in quarter 2",
            [],
        ),
    ],
)
def test_answers_cite_the_section_slide_and_sheet_with_verbatim_quotes(
    indexed: tuple[str, dict[str, str]],
    capsys: pytest.CaptureFixture[str],
    question: str,
    doc: str,
    label: str,
    quote: str,
    header: list[str],
) -> None:
    data, _ = indexed

    code, out, err = run(capsys, "ask", question, "--json", "--doc", doc, "--data-dir", data)

    assert code == 0, err
    answer = json.loads(out)
    cited = [c for c in answer["citations"] if c["label"] == label]
    assert cited, answer["citations"]
    assert cited[0]["quote"] == quote
    assert cited[0].get("table_header", []) == header
    _, text, _ = run(capsys, "text", doc, "--json", "--data-dir", data)
    page = next(p for p in json.loads(text) if p["page"] == cited[0]["page"])
    assert page["label"] == label
    assert quote in page["text"]


def test_text_names_each_location_by_its_label(
    indexed: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = indexed

    code, out, err = run(capsys, "text", "deck.pptx", "--data-dir", data)

    assert code == 0, err
    assert "--- Quarterly results 1 (deck.pptx), Slide 1: Quarterly results 1 ---" in out
    assert "Notes:\nSay the numbers slowly 1" in out
