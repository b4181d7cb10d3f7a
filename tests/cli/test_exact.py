"""The CLI indexes every document's text once, removes exactly what was named, and says what is
wrong in the words of the command used (issue 12, items 6, 7 and 10)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from docchat.cli import main
from tests.cli.run import run_flat
from tests.conftest import EXAMPLES
from tests.pdfgen import make_pdf

DMCA = EXAMPLES / "dmca.pdf"
HABIBI = Path(__file__).resolve().parents[2].parent / "shared/data/pdfs/py-pdf-sample-files"
HABIBI = HABIBI / "015-arabic" / "habibi.pdf"


def _status(capsys: pytest.CaptureFixture[str], data: Path) -> dict[str, dict[str, object]]:
    code, out, _ = run_flat(capsys, "status", "--json", "--data-dir", data)
    assert code == 0
    return {Path(str(d["source"])).name: d for d in json.loads(out)["documents"]}


# --- item 6: a document's text is always indexed ------------------------------------------


def test_a_pdf_whose_only_text_is_one_heading_is_indexed_with_that_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    (folder / "abc.pdf").write_bytes(make_pdf([[("h1", "abc")]], outline=True))
    (folder / "alike.pdf").write_bytes(
        make_pdf(
            [
                [("body", f"Page {p}, line {n}: the boat leaves at {p}.") for n in range(30)]
                for p in range(6)
            ]
        )
    )
    if HABIBI.is_file():
        shutil.copy(HABIBI, folder / "habibi.pdf")
    data = tmp_path / "data"

    code, out, _ = run_flat(capsys, "ingest", folder, "--data-dir", data)

    assert code == 0, out
    documents = _status(capsys, data)
    assert documents["abc.pdf"]["chunks"] == 1
    assert documents["alike.pdf"]["chunks"] >= 6  # pages alike but for their numbers
    hits = json.loads(run_flat(capsys, "search", "abc", "--json", "--data-dir", data)[1])
    assert "abc" in [h["text"] for h in hits]
    if HABIBI.is_file():
        assert documents["habibi.pdf"]["chunks"] == 1
        hits = json.loads(run_flat(capsys, "search", "habibi", "--json", "--data-dir", data)[1])
        assert "habibi" in hits[0]["text"]


# --- item 7: identical content once; rm removes exactly what was named --------------------


@pytest.fixture
def twins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Path]:
    """dmca.pdf under two folders and notes.pdf, ingested: (data dir, first copy, second)."""
    first, second = tmp_path / "a" / "dmca.pdf", tmp_path / "b" / "dmca.pdf"
    for path in (first, second):
        path.parent.mkdir()
        shutil.copy(DMCA, path)
    (tmp_path / "a" / "notes.pdf").write_bytes(
        make_pdf([[("body", "The bridge reopens on Monday.")]])
    )
    data = tmp_path / "data"
    code, out, _ = run_flat(capsys, "ingest", tmp_path / "a", tmp_path / "b", "--data-dir", data)
    assert code == 0, out
    # The same name in two folders: the message names the first by its path
    assert f"dmca.pdf: the same content as {first.resolve()} (dmca-" in " ".join(out.split())
    return data, first, second


@pytest.mark.slow
def test_the_same_bytes_under_two_paths_are_two_documents_embedded_once(
    twins: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, first, second = twins

    out = run_flat(capsys, "status", "--json", "--data-dir", data)[1]
    documents = json.loads(out)["documents"]
    dmca = [d for d in documents if Path(d["source"]).name == "dmca.pdf"]
    assert len(documents) == 3
    assert sorted(d["source"] for d in dmca) == sorted(
        [str(first.resolve()), str(second.resolve())]
    )
    assert [d["status"] for d in dmca] == ["INDEXED", "INDEXED"]
    assert dmca[0]["chunks"] == dmca[1]["chunks"] > 0
    # Results never come in identical pairs
    hits = json.loads(
        run_flat(capsys, "search", "circumvention", "--json", "--top-k", "10", "--data-dir", data)[
            1
        ]
    )
    texts = [h["text"] for h in hits]
    assert len(texts) == len(set(texts)) == 10
    # And status lists both names
    shown = " ".join(run_flat(capsys, "status", "--data-dir", data)[1].split())
    assert all(d["doc_id"] in shown for d in dmca)


@pytest.mark.slow
def test_rm_removes_exactly_what_was_named_and_lists_only_the_candidates(
    twins: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, first, second = twins
    listed = json.loads(run_flat(capsys, "status", "--json", "--data-dir", data)[1])["documents"]
    dmca_id = next(d["doc_id"] for d in listed if d["source"] == str(first.resolve()))

    # A name two files have: the candidates (and nothing else) are listed, nothing is removed
    code, _, err = run_flat(capsys, "rm", "dmca.pdf", "--data-dir", data)
    assert code == 2
    assert "'dmca.pdf' names 2 files" in err
    assert str(first.resolve()) in err and str(second.resolve()) in err
    assert "notes" not in err
    # A name no file has: no list of unrelated documents either
    code, _, err = run_flat(capsys, "rm", "DMCA.PDF", "--data-dir", data)
    assert code == 2 and "is not in the index" in err and "notes" not in err
    assert (
        len(json.loads(run_flat(capsys, "status", "--json", "--data-dir", data)[1])["documents"])
        == 3
    )

    # One full path: that document goes, the content stays searchable under the other
    code, out, _ = run_flat(capsys, "rm", str(first), "--data-dir", data)
    assert code == 0 and out.startswith("removed dmca-")
    left = _status(capsys, data)
    assert left["dmca.pdf"]["source"] == str(second.resolve())
    assert left["dmca.pdf"]["status"] == "INDEXED" and left["dmca.pdf"]["chunks"] > 0
    assert left["dmca.pdf"]["doc_id"] != dmca_id
    hits = json.loads(run_flat(capsys, "search", "circumvention", "--json", "--data-dir", data)[1])
    assert hits and all(h["doc_id"] == left["dmca.pdf"]["doc_id"] for h in hits)

    # Now the name is unambiguous; then an id removes the document
    code, out, _ = run_flat(capsys, "rm", "dmca.pdf", "--data-dir", data)
    assert code == 0 and out.startswith("removed dmca-")
    notes_id = str(_status(capsys, data)["notes.pdf"]["doc_id"])
    assert run_flat(capsys, "rm", notes_id, "--data-dir", data)[0] == 0
    assert _status(capsys, data) == {}


# --- item 10: small things a user trips on ------------------------------------------------


@pytest.mark.parametrize("top_k", ["0", "-5", "51", "three"])
def test_top_k_out_of_range_is_an_error_with_exit_2(
    top_k: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("search", "ask"):
        with pytest.raises(SystemExit) as exited:
            main([command, "ferry", "--top-k", top_k, "--data-dir", str(tmp_path)])
        assert exited.value.code == 2
        err = " ".join(capsys.readouterr().err.split())
        assert f"--top-k: {top_k!r} is not a number of passages" in err
        assert "from 1 to 50" in err


def test_status_of_a_mistyped_data_dir_is_an_error_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (("status",), ("search", "ferry"), ("ask", "ferry"), ("rm", "x.pdf")):
        code, out, err = run_flat(capsys, *command, "--data-dir", tmp_path / "dat")
        assert code == 2 and "there is no docchat index in" in err, (command, out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_status_counts_in_words_and_ingest_advice_says_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    (folder / "one.pdf").write_bytes(make_pdf([[("body", "A single line of text.")]]))
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf")
    data = tmp_path / "data"

    code, out, _ = run_flat(capsys, "ingest", folder, "--data-dir", data)

    assert code == 1
    flat = " ".join(out.split())
    assert "ingest the PDF again" in flat and "then ingest it again" in flat
    assert "upload" not in flat.casefold()
    assert "1 of 3 documents indexed or unchanged; 2 failed" in flat
    code, out, _ = run_flat(capsys, "status", "--data-dir", data)
    assert "3 documents, 1 chunk, 1 page indexed" in " ".join(out.split())
    assert re.search(r"\bupload\b", out) is None
