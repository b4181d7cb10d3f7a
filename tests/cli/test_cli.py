"""`docchat` end to end in a temporary data directory, with the real offline embedder."""

from __future__ import annotations

import gc
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docchat.cli import main
from tests.cli.run import run
from tests.conftest import EXAMPLES, page_texts, squash
from tests.pdfgen import make_pdf

DMCA = EXAMPLES / "dmca.pdf"


@pytest.fixture
def library(tmp_path: Path) -> Path:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    shutil.copy(DMCA, folder / "dmca.pdf")
    (folder / "notes.pdf").write_bytes(
        make_pdf(
            [
                [("h1", "Bridge notes"), ("body", "The bridge reopens on Monday after repairs.")],
                [("h2", "Budget"), ("body", "The repairs cost four million euros.")],
            ]
        )
    )
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf")
    # A type docchat does not read is not picked up from a folder (.txt and Office files are).
    (folder / "readme.rtf").write_text("{\\rtf1 not picked up from a folder}")
    return folder


def test_cli_ingest_folder_then_ask_cites_pages_that_hold_the_quotes(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")

    code, out, _ = run(capsys, "ingest", str(library), "--data-dir", data)

    assert code == 1  # one document failed; the others are indexed all the same
    assert re.search(r"dmca\.pdf\s+│\s+18\s+│\s+\d+\s+│\s+[\d.]+\s+│ indexed", out)
    assert re.search(r"notes\.pdf\s+│\s+2\s+│\s+2\s+│", out)
    assert re.search(r"broken\.pdf .* FAILED \(malformed_pdf\)", out)
    assert "broken.pdf: the PDF is damaged and cannot be read" in out
    assert "readme" not in out

    code, out, _ = run(
        capsys,
        "ask",
        "What does the DMCA say about circumvention of technological protection measures?",
        "--data-dir",
        data,
        "--json",
    )

    assert code == 0
    answer = json.loads(out)
    assert answer["mode"] == "extractive"
    assert "No language model is configured" in answer["text"]
    pages = page_texts(DMCA)
    cited = {(c["doc_id"], c["page"]) for c in answer["citations"]}
    assert len(cited) >= 2
    for citation in answer["citations"]:
        assert citation["source"].endswith("dmca.pdf")
        quote, page = citation["quote"], pages[citation["page"] - 1]
        if "page_end" not in citation:
            assert squash(quote) in page, citation
            continue
        # A sentence a page break cuts is quoted to its end on the next page: its head is on
        # the cited page and the rest at the top of the next, past that page's running head
        after = pages[citation["page_end"] - 1]
        words = quote.split(" ")
        assert any(
            squash(" ".join(words[:n])) in page and squash(" ".join(words[n:])) in after
            for n in range(1, len(words))
        ), citation


def test_cli_reingest_is_noop_and_changed_file_replaces_chunks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    pdf = tmp_path / "notes.pdf"
    pdf.write_bytes(make_pdf([[("body", "The ferry leaves at noon every day.")]]))
    assert run(capsys, "ingest", str(pdf), "--data-dir", data)[0] == 0

    code, out, _ = run(capsys, "ingest", str(pdf), "--data-dir", data)
    assert code == 0 and "unchanged" in out

    pdf.write_bytes(make_pdf([[("body", "The train departs at midnight on Sundays.")]]))
    assert "indexed (revision 2)" in run(capsys, "ingest", str(pdf), "--data-dir", data)[1]

    code, out, _ = run(capsys, "search", "ferry noon", "--data-dir", data, "--json", "--top-k", "5")
    hits = json.loads(out)
    assert code == 0
    assert [h["text"] for h in hits] == ["The train departs at midnight on Sundays."]
    assert {"doc_id", "page_start", "page_end", "score", "title", "headings"} <= set(hits[0])


def test_cli_status_and_rm(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    run(
        capsys,
        "ingest",
        str(library / "notes.pdf"),
        str(library / "broken.pdf"),
        "--data-dir",
        data,
    )

    code, out, _ = run(capsys, "status", "--json", "--data-dir", data)
    status = json.loads(out)
    assert code == 0
    by_name = {Path(d["source"]).name: d for d in status["documents"]}
    assert by_name["notes.pdf"]["status"] == "INDEXED" and by_name["notes.pdf"]["chunks"] == 2
    assert by_name["broken.pdf"]["status"] == "FAILED"
    assert status["stats"]["chunks"] == 2

    code, out, _ = run(capsys, "rm", "notes.pdf", "--data-dir", data)
    assert code == 0 and "removed notes-" in out
    assert json.loads(run(capsys, "search", "bridge", "--json", "--data-dir", data)[1]) == []

    code, _, err = run(capsys, "rm", "notes.pdf", "--data-dir", data)
    assert code == 2 and "'notes.pdf' is not in the index" in err


def test_cli_ask_limited_to_one_document(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    run(capsys, "ingest", str(library / "notes.pdf"), "--data-dir", data)

    code, out, _ = run(
        capsys, "ask", "How much did the repairs cost?", "--doc", "notes.pdf", "--data-dir", data
    )

    assert code == 0
    assert "“The repairs cost four million euros.”" in out
    assert "Bridge notes, page 2 (notes.pdf)" in out
    assert out.endswith("\n")  # the shell's prompt starts on its own line

    # An answer without sources still ends its line
    code, out, _ = run(capsys, "ask", "zqxjv wpfk?", "--doc", "notes.pdf", "--data-dir", data)
    assert code == 0 and out.strip() and out.endswith("\n") and "Sources" not in out, out


def test_ask_shows_the_search_it_makes_on_one_line_as_typed(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It read `search_documents {"query": "What is \u201cthe bridge\u201d [2019] …` folded at
    # 80 columns, and a "[…]" in the question is text, not markup.
    data = str(tmp_path / "data")
    run(capsys, "ingest", str(library / "notes.pdf"), "--data-dir", data)
    question = "What did the “bridge notes” [2019 draft] say about the repairs and their cost?"

    code, _, err = run(capsys, "ask", question, "--data-dir", data)

    assert code == 0
    assert f'search_documents {{"query": "{question}"}}\n' in err


def test_cli_reports_bad_input_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ingest", str(tmp_path / "missing.pdf"), "--data-dir", str(tmp_path))
    assert code == 2 and "no such file or folder" in err

    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "ingest", str(empty), "--data-dir", str(tmp_path))
    assert code == 2 and "no documents (a PDF, .docx, .pptx, .xlsx, .html, .md or .txt file)" in err


def test_cli_entry_point_runs_as_installed_command(tmp_path: Path) -> None:
    docchat = Path(sys.executable).parent / "docchat"
    result = subprocess.run(
        [str(docchat), "status", "--data-dir", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # A mistyped data directory is an error, and nothing is created
    assert result.returncode == 2, result.stderr
    assert "there is no docchat index in" in " ".join(result.stderr.split())
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(
    ("cited", "listed"),
    [
        # Passage 2 quoted twice and passage 1 once: each once, in number order
        (
            [(2, 3), (1, 4), (2, 3)],
            ["  [1] Guide, page 4 (guide.pdf)", "  [2] Guide, page 3 (guide.pdf)"],
        ),
        # One passage running from page 10 onto page 11, quoted on both: [1] once with both
        # pages (it was listed twice, as if two sources had [1])
        ([(1, 11), (1, 10), (1, 11)], ["  [1] Guide, pages 10, 11 (guide.pdf)"]),
    ],
)
def test_ask_lists_each_cited_passage_once_with_its_pages(
    monkeypatch: pytest.MonkeyPatch, cited: list[tuple[int, int]], listed: list[str]
) -> None:
    import io

    from rich.console import Console

    from docchat.cli import common
    from docchat.cli.ask import print_sources
    from docchat.models import Answer, Citation

    answer = Answer(
        text="…",
        citations=[
            Citation(number=n, doc_id="d", title="Guide", source="/x/guide.pdf", page=p, quote="q")
            for n, p in cited
        ],
        mode="extractive",
    )
    printed = io.StringIO()
    monkeypatch.setattr(common, "out", Console(file=printed, width=200))

    print_sources(answer)

    assert printed.getvalue().split("Sources\n", 1)[1].splitlines() == listed


def test_each_command_closes_the_index_it_opened(tmp_path: Path) -> None:
    # Commands run one after another in one process (as here, or a script importing docchat):
    # the data directory must be whole when each returns, not when the garbage collector closes
    # a forgotten connection (that close deletes the WAL file under a copy being made).
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(make_pdf([[("body", "The ferry leaves the north pier every hour.")]]))
    data = tmp_path / "data"
    gc.disable()  # only an explicit close may remove the WAL file
    try:
        for argv in (
            ["ingest", str(pdf)],
            ["status"],
            ["search", "ferry"],
            ["ask", "When does the ferry leave?"],
            ["text", "a.pdf"],
            ["rm", "a.pdf"],
        ):
            assert main([*argv, "--data-dir", str(data)]) == 0, argv
            assert not (data / "index.sqlite3-wal").exists(), argv
    finally:
        gc.enable()


def test_cli_status_of_a_collection_totals_only_its_documents(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given notes.pdf in the collection `notes`, dmca.pdf and broken.pdf in `default`
    data = str(tmp_path / "data")
    run(capsys, "ingest", str(library / "notes.pdf"), "--collection", "notes", "--data-dir", data)
    run(
        capsys, "ingest", str(library / "dmca.pdf"), str(library / "broken.pdf"), "--data-dir", data
    )

    # When the status of `notes` is asked for, its totals count notes.pdf only
    code, out, _ = run(capsys, "status", "--collection", "notes", "--json", "--data-dir", data)
    stats = json.loads(out)["stats"]
    assert code == 0
    assert (stats["documents"], stats["chunks"], stats["indexed_pages"]) == (1, 2, 2)
    assert stats["by_status"] == {"INDEXED": 1}
    _, out, _ = run(capsys, "status", "--collection", "notes", "--data-dir", data)
    assert "1 document, 2 chunks, 2 pages indexed" in out
    # And the whole index's are as before
    whole = json.loads(run(capsys, "status", "--json", "--data-dir", data)[1])["stats"]
    assert whole["documents"] == 3 and whole["chunks"] > 2


def test_cli_collections_and_move_print_through_the_clis_console(
    library: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given notes.pdf in the collection `notes`, and the CLI's console recording what it prints
    from rich.console import Console

    from docchat.cli import common

    data = str(tmp_path / "data")
    code, out, _ = run(
        capsys, "ingest", str(library / "notes.pdf"), "--collection", "notes", "--data-dir", data
    )
    assert code == 0, out
    printed = io.StringIO()
    monkeypatch.setattr(common, "out", Console(file=printed, width=200, highlight=False))

    # When the collections are listed, then notes.pdf is moved to `bridges` and listed again
    assert main(["collections", "--data-dir", data]) == 0
    assert main(["move", "notes.pdf", "--to", "bridges", "--data-dir", data]) == 0
    assert main(["collections", "--data-dir", data]) == 0

    # Then every line went to the CLI's one console: the two tables and the move between them
    before, after = printed.getvalue().split("collections in ")[1:]
    assert re.search(r"│ default\s+│\s+0 │", before) and re.search(r"│ notes\s+│\s+1 │", before)
    assert "(notes.pdf) is in bridges" in before
    assert re.search(r"│ bridges\s+│\s+1 │", after) and "│ notes" not in after
    assert capsys.readouterr().out == ""


def test_cli_refuses_a_collection_no_document_is_in(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given notes.pdf in the collection `notes`
    data = str(tmp_path / "data")
    run(capsys, "ingest", str(library / "notes.pdf"), "--collection", "notes", "--data-dir", data)

    # When a command names a collection no document is in, it says so instead of answering
    # from nothing (a mistyped name was an empty search, exit 0)
    for argv in (["search", "notes"], ["ask", "What are the notes about?"], ["status"]):
        code, out, err = run(capsys, *argv, "--collection", "nope", "--data-dir", data)
        assert code != 0, argv
        assert "no collection 'nope'" in err, (argv, out, err)
    # And the collections that hold documents (and the default one) still answer
    assert run(capsys, "search", "notes", "--collection", "notes", "--data-dir", data)[0] == 0
    assert run(capsys, "status", "--collection", "default", "--data-dir", data)[0] == 0


def test_cli_prints_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    # `docchat --version` was "error: the following arguments are required: command"
    from importlib import metadata

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])

    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"docchat {metadata.version('docchat')}"


def test_cli_ingest_not_to_a_terminal_prints_a_line_per_document_and_stage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two documents, and stderr that is not a terminal (captured, as a CI log is)
    folder = tmp_path / "pdfs"
    folder.mkdir()
    (folder / "a.pdf").write_bytes(make_pdf([[("h1", "Alpha"), ("body", "The alpha text.")]]))
    (folder / "b.pdf").write_bytes(
        make_pdf([[("body", "Bravo, page one.")], [("body", "Bravo, page two.")]])
    )

    # When they are ingested
    code, _, err = run(capsys, "ingest", str(folder), "--data-dir", str(tmp_path / "data"))

    # Then each stage of each document is a plain line of its own, and no bar is drawn
    assert code == 0
    lines = [re.sub(r"in [\d.]+ s$", "in N s", line) for line in err.splitlines()]
    assert lines == [
        "a.pdf: convert (1 page)",
        "a.pdf: embed (1 chunk)",
        "a.pdf: indexed in N s",
        "b.pdf: convert (2 pages)",
        "b.pdf: embed (1 chunk)",  # two short pages: one chunk
        "b.pdf: indexed in N s",
    ]


def test_ingest_of_a_pdf_with_a_deep_outline_prints_no_library_warning(tmp_path: Path) -> None:
    # Given a PDF whose outline nests four deep (most 10-Ks' do), headings read to three
    from tests.cli.sandbox import DOCCHAT, env

    kinds = ("h1", "h2", "h3", "h4")
    pages = [[(kind, f"Part {n} {kind}") for kind in kinds] + [("body", "Text.")] for n in range(3)]
    folder = tmp_path / "pdfs"
    folder.mkdir()
    (folder / "deep.pdf").write_bytes(make_pdf(pages, outline=True))

    # When it is ingested as a user runs it
    result = subprocess.run(
        [str(DOCCHAT), "ingest", "--data-dir", str(tmp_path / "data"), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env(),
        check=False,
    )

    # Then it is indexed, and pypdfium2's "Maximum recursion depth 3 reached" is not printed
    assert result.returncode == 0, result.stderr
    assert "Maximum recursion" not in result.stdout + result.stderr, result.stderr


def test_cli_ingest_again_reads_an_indexed_document_anew_and_keeps_its_collection(
    library: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given: notes.pdf indexed in a collection by a docchat that titled it otherwise (as one
    # before a reading fix did: JPMorgan's 10-Qs were "(G)" until the symbol fix)
    data, notes = str(tmp_path / "data"), str(library / "notes.pdf")
    monkeypatch.setattr("docchat.ingest.stages.filing_title", lambda pages: "An older title")
    assert run(capsys, "ingest", notes, "--collection", "team", "--data-dir", data)[0] == 0
    monkeypatch.undo()

    # When: ingested again as it is, then with --again
    code, out, _ = run(capsys, "ingest", notes, "--data-dir", data)
    assert code == 0 and "unchanged" in out
    stale = json.loads(run(capsys, "status", "--json", "--data-dir", data)[1])["documents"]
    code, out, _ = run(capsys, "ingest", notes, "--again", "--data-dir", data)

    # Then: the same bytes are read anew; one document, its collection and chunk count kept
    assert code == 0 and "indexed" in out, out
    [before], [after] = (
        stale,
        json.loads(run(capsys, "status", "--json", "--data-dir", data)[1])["documents"],
    )
    assert before["title"] == "An older title" != after["title"]
    assert after["collections"] == ["team"] and after["chunks"] == before["chunks"]
    code, out, _ = run(capsys, "search", "repairs cost", "--data-dir", data)
    assert code == 0 and out.count("four million euros") >= 1
