"""`docchat ask` and `docchat search`: blank questions, and no server paths in their JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.run import run_flat
from tests.pdfgen import make_pdf


@pytest.mark.parametrize(("command", "what"), [("ask", "question"), ("search", "search query")])
@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_a_blank_question_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, what: str, text: str
) -> None:
    code, out, err = run_flat(capsys, command, text, "--data-dir", str(tmp_path / "d"))

    assert code == 2
    assert f"error: the {what} is empty: say what to look for in the documents" in err
    assert out == ""


def test_json_answers_name_documents_without_their_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "private" / "contracts"
    folder.mkdir(parents=True)
    (folder / "notes.pdf").write_bytes(
        make_pdf(
            [[("h1", "Bridge notes"), ("body", "The bridge reopens on Monday after repairs.")]]
        )
    )
    data = str(tmp_path / "data")
    assert run_flat(capsys, "ingest", str(folder), "--data-dir", data)[0] == 0

    _, found, _ = run_flat(capsys, "search", "bridge reopens", "--json", "--data-dir", data)
    _, answered, _ = run_flat(
        capsys, "ask", "When does the bridge reopen?", "--json", "--data-dir", data
    )

    hits = json.loads(found)
    citations = json.loads(answered)["citations"]
    assert hits and citations
    assert {h["source"] for h in hits} == {c["source"] for c in citations} == {"notes.pdf"}
    assert str(tmp_path) not in found and str(tmp_path) not in answered
