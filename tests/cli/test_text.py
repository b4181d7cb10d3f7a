"""`docchat text`: the text conversion extracted, page by page, for any way of naming a file."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from docchat.cli import main
from docchat.ingest.decision import doc_id_for
from docchat.ingest.local import source_of
from tests.cli.run import run
from tests.pdfgen import make_pdf

ODD_NAMES = ["Q3 [draft] résumé #2.pdf", "契約書 (final).pdf", "--notes.pdf"]
PAGES = [
    [("h1", "Ferry timetable"), ("body", "The ferry to the island leaves every hour.")],
    [("h2", "Winter"), ("body", "In winter the last ferry leaves at six.")],
    [("h2", "Fares"), ("body", "A return ticket costs twelve euros.")],
]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Path]]:
    """A data directory holding the same timetable under odd names, each copy edited a little
    so that every one is a document of its own (ingested once for the module)."""
    folder = tmp_path_factory.mktemp("text")
    data = str(folder / "data")
    files = []
    for n, name in enumerate(ODD_NAMES):
        path = folder / name
        path.write_bytes(make_pdf([*PAGES, [("body", f"Copy number {n}.")]]))
        files.append(path)
    assert main(["ingest", *map(str, files), "--data-dir", data]) == 0
    return data, files


@pytest.mark.parametrize("name", ODD_NAMES)
def test_text_json_by_file_name_lists_each_page(
    indexed: tuple[str, list[Path]], capsys: pytest.CaptureFixture[str], name: str
) -> None:
    data, _ = indexed

    # "--" ends the options: a name that starts with "-" is a name.
    code, out, err = run(capsys, "text", "--json", "--data-dir", data, "--", name)

    assert code == 0, err
    pages = json.loads(out)
    assert [p["page"] for p in pages] == [1, 2, 3, 4]
    assert pages[0] == {
        "page": 1,
        "text": "# Ferry timetable\n\nThe ferry to the island leaves every hour.",
        "ocr": False,
    }
    assert pages[3]["text"] == f"Copy number {ODD_NAMES.index(name)}."


def test_text_by_id_and_by_path_with_a_page_range(
    indexed: tuple[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    data, files = indexed
    doc_id = doc_id_for(source_of(files[1]))

    by_id = run(capsys, "text", doc_id, "--pages", "2-3", "--json", "--data-dir", data)
    by_path = run(capsys, "text", str(files[1]), "--pages", "2-", "--json", "--data-dir", data)
    one = run(capsys, "text", doc_id, "--pages", "3", "--json", "--data-dir", data)

    assert [p["page"] for p in json.loads(by_id[1])] == [2, 3]
    assert [p["page"] for p in json.loads(by_path[1])] == [2, 3, 4]
    assert json.loads(one[1]) == [
        {"page": 3, "text": "## Fares\n\nA return ticket costs twelve euros.", "ocr": False}
    ]


def test_text_plain_names_title_file_and_page(
    indexed: tuple[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = indexed

    code, out, _ = run(capsys, "text", ODD_NAMES[0], "--pages", "2", "--data-dir", data)

    assert code == 0
    assert out == (
        f"--- Ferry timetable ({ODD_NAMES[0]}), page 2 ---\n"
        "## Winter\n\nIn winter the last ferry leaves at six.\n"
    )


@pytest.mark.parametrize(
    ("doc", "pages", "message"),
    [
        ("nothing.pdf", "1", "'nothing.pdf' is not in the index"),
        ("no-such-id-0000", "1", "'no-such-id-0000' is not in the index"),
        (ODD_NAMES[0], "5", "has 4 pages: page 5 is out of range, ask for 1-4"),
        (ODD_NAMES[0], "3-9", "has 4 pages: pages 3-9 is out of range, ask for 1-4"),
        (ODD_NAMES[0], "0", "page 0 is out of range"),
    ],
)
def test_text_unknown_document_or_page_says_what_to_do(
    indexed: tuple[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    doc: str,
    pages: str,
    message: str,
) -> None:
    data, _ = indexed

    code, out, err = run(capsys, "text", doc, "--pages", pages, "--data-dir", data)

    assert (code, out) == (2, "")
    assert message in " ".join(err.split())


def test_text_rejects_a_page_range_that_is_not_one(
    indexed: tuple[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["text", ODD_NAMES[0], "--pages", "two", "--data-dir", indexed[0]])

    assert exit_.value.code == 2
    assert "'two' is not a page range" in capsys.readouterr().err


def test_text_rejects_a_page_range_that_ends_before_it_starts(
    indexed: tuple[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    # "3-1" was taken as a range and refused as out of range ("ask for 1-18")
    with pytest.raises(SystemExit) as exit_:
        main(["text", ODD_NAMES[0], "--pages", "3-1", "--data-dir", indexed[0]])

    assert exit_.value.code == 2
    assert "'3-1' ends before it starts: give the first page first (1-3)" in " ".join(
        capsys.readouterr().err.split()
    )


def test_text_of_a_document_that_failed_to_index_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # An empty file fails to index; its text was "not kept ... documents indexed before docchat
    # kept page text have none", as if the index were old
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    data = str(tmp_path / "data")
    assert run(capsys, "ingest", str(empty), "--data-dir", data)[0] == 1

    code, _, err = run(capsys, "text", "empty.pdf", "--data-dir", data)

    said = " ".join(err.split())
    assert code == 2
    assert "has no page text: it failed to index: the file is empty" in said
    assert "indexed before docchat kept page text" not in said


def test_text_of_document_indexed_before_pages_were_kept_says_to_ingest_again(
    indexed: tuple[str, list[Path]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # An index of schema 4 (before page text was kept) has no pages table: it upgrades on open.
    data = str(shutil.copytree(indexed[0], tmp_path / "data"))
    with sqlite3.connect(Path(data) / "index.sqlite3") as db:
        db.execute("DROP TABLE pages")
        db.execute("UPDATE meta SET value = '4' WHERE key = 'schema'")

    code, _, err = run(capsys, "text", ODD_NAMES[1], "--data-dir", data)
    status = json.loads(run(capsys, "status", "--json", "--data-dir", data)[1])

    assert code == 2
    assert "was not kept" in err
    assert "remove the document and add its file again" in " ".join(err.split())
    assert len(status["documents"]) == 3  # the upgrade kept the documents


def test_status_shows_each_documents_id_and_file_name_whole(
    indexed: tuple[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    # Piped, Rich folded the table into 80 columns (ids read "mlaut-ca…", which `rm`, `text`
    # and `--doc` cannot take), and read "[draft]" in "Q3 [draft] résumé #2.pdf" as markup.
    data, files = indexed

    status = json.loads(run(capsys, "status", "--json", "--data-dir", data)[1])
    table = run(capsys, "status", "--data-dir", data)[1]
    _, summary, progress = run(capsys, "ingest", str(files[0]), "--data-dir", data)

    assert sorted(d["file_name"] for d in status["documents"]) == sorted(ODD_NAMES)
    assert all(d["title"] == "Ferry timetable" for d in status["documents"])
    header = next(line for line in table.splitlines() if " id " in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")][:3] == ["id", "title", "file"]
    rows = [line for line in table.splitlines() if line.startswith("│")]
    for document in status["documents"]:
        assert any(document["doc_id"] in row and document["file_name"] in row for row in rows)
    assert "Q3 [draft] résumé #2.pdf" in summary and "Q3 [draft] résumé #2.pdf" in progress
