"""What `docchat` prints of documents: a name with bidirectional controls cannot pass for another
in any command's output (its JSON keeps the real name), and `docchat status` reads in a terminal
80 columns wide."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from docchat.cli import common as cli
from docchat.cli import main
from tests.cli.run import run
from tests.pdfgen import make_pdf

SPOOFED = "report\u202egnp.pdf"  # reads as "reportfdp.png"
ESCAPED = "report<U+202E>gnp.pdf"
LONG = "Quarterly financial statements and management discussion 2024 Q3 final version.pdf"
# Unicode's Bidi_Control characters (ALM, LRM, RLM, embeddings, overrides, isolates).
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A data directory with a spoofing name, a long name, and a PDF that fails (once a module)."""
    folder = tmp_path_factory.mktemp("names")
    (folder / SPOOFED).write_bytes(make_pdf([[("body", "The lighthouse bell rings at dawn.")]]))
    (folder / LONG).write_bytes(make_pdf([[("body", "The harbour ferry is cancelled in storms.")]]))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf")
    data = str(folder / "data")
    assert main(["ingest", str(folder), "--data-dir", data]) == 1  # broken.pdf fails
    return data


def _terminal(monkeypatch: pytest.MonkeyPatch, width: int) -> io.StringIO:
    """`docchat`'s standard output as a terminal `width` columns wide would get it."""
    printed = io.StringIO()
    console = Console(
        file=printed, width=width, force_terminal=True, color_system=None, highlight=False
    )
    monkeypatch.setattr(cli, "out", console)
    return printed


def test_ingest_shows_a_bidi_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a good PDF and a broken one under names that spoof their type
    (tmp_path / SPOOFED).write_bytes(make_pdf([[("body", "The bell rings at noon.")]]))
    (tmp_path / "notes\u202etxt.pdf").write_bytes(b"%PDF-1.7\nnot really")

    code, out, err = run(capsys, "ingest", str(tmp_path), "--data-dir", str(tmp_path / "d"))

    # Then the progress, the summary and the failure name them with the control escaped
    assert code == 1
    assert ESCAPED in out and ESCAPED in err
    assert "notes<U+202E>txt.pdf: the PDF is damaged" in _flat(out)
    assert not BIDI.search(out + err)


def test_status_ask_and_text_show_a_bidi_name_escaped(
    data: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, listed, _ = run(capsys, "status", "--json", "--data-dir", data)
    [spoofed] = [d for d in json.loads(listed)["documents"] if d["file_name"] == SPOOFED]

    shown = {
        "status": run(capsys, "status", "--data-dir", data)[1],
        "ask": run(capsys, "ask", "When does the lighthouse bell ring?", "--data-dir", data)[1],
        "search": run(capsys, "search", "lighthouse bell", "--data-dir", data)[1],
        "text": run(capsys, "text", spoofed["doc_id"], "--data-dir", data)[1],
    }

    assert ESCAPED in shown["status"]
    assert f"({ESCAPED})" in shown["ask"].split("Sources", 1)[1]  # the cited file
    assert "report<U+202E>gnp, p. 1" in shown["search"]
    assert shown["text"].startswith(f"--- report<U+202E>gnp ({ESCAPED}), page 1 ---")
    for command, printed in shown.items():
        assert not BIDI.search(printed), command
    # The JSON is for programs: it keeps the file's real name
    assert spoofed["title"] == "report\u202egnp"


def test_an_error_naming_a_file_shows_its_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "err", Console(stderr=True, width=1000, highlight=False))
    # (and "[draft]" is the name's, not Rich markup)
    missing = tmp_path / "other [draft]\u202efdp.exe.pdf"

    code, _, err = run(capsys, "ingest", str(missing), "--data-dir", str(tmp_path / "d"))

    assert code == 2
    assert "other [draft]<U+202E>fdp.exe.pdf" in err and not BIDI.search(err)


def test_status_reads_in_80_columns(
    data: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = json.loads(run(capsys, "status", "--json", "--data-dir", data)[1])["documents"]
    # Given a terminal 80 columns wide
    printed = _terminal(monkeypatch, 80)

    assert main(["status", "--data-dir", data]) == 0

    lines = printed.getvalue().splitlines()
    # Then nothing runs past the edge, nothing is cut short, and each id is whole on its line
    assert max(map(cell_len, lines)) <= 80, printed.getvalue()
    assert "…" not in printed.getvalue()
    flat = _flat(printed.getvalue())
    assert f"file {LONG}" in flat and f"file {ESCAPED}" in flat
    assert "reason the PDF is damaged and cannot be read" in flat
    assert {d["doc_id"] for d in documents} <= set(lines)  # as `rm`, `text` and `--doc` take them
    assert "FAILED · 0 pages · 0 chunks" in flat and "INDEXED · 1 page · 1 chunk" in flat


def test_status_in_a_wide_terminal_is_a_table(data: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Wide enough for the ids and 24 columns for each title, file name and reason
    printed = _terminal(monkeypatch, 200)

    assert main(["status", "--data-dir", data]) == 0

    table = printed.getvalue()
    assert re.search(r"┃ id\s+┃ title\s+┃ file\s+┃ status\s+┃ pages ┃ chunks ┃ reason", table)
    assert max(map(cell_len, table.splitlines())) <= 200
    assert f"│ {ESCAPED}" in table and "│ Quarterly financial" in table


def test_a_name_with_a_zero_width_character_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two files whose names look the same: one holds a zero width space
    (tmp_path / "report.pdf").write_bytes(make_pdf([[("body", "The bell rings at noon.")]]))
    (tmp_path / "rep\u200bort.pdf").write_bytes(make_pdf([[("body", "The gate opens at six.")]]))
    data = str(tmp_path / "d")
    assert main(["ingest", str(tmp_path), "--data-dir", data]) == 0
    capsys.readouterr()

    code, out, _ = run(capsys, "status", "--data-dir", data)

    # Then the one with the invisible character says it has one
    assert code == 0
    assert "rep<U+200B>ort.pdf" in out and "report.pdf" in out
    assert "\u200b" not in out
