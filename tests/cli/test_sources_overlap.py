"""The web source where what it synced is also held elsewhere: a second source over the same
site, a synced document removed by hand, a PDF the site renames. Each through `docchat sync`
against a real site on 127.0.0.1 (tests/cli/website.py); found in a stranger's trial."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from docchat.ingest.decision import doc_id_for
from tests.cli.run import add_web, last_sync, run, served_app, status_documents
from tests.cli.website import PDF, Page, Site, page, serving
from tests.conftest import REPO

REPORT_PDF = (
    REPO.parent
    / "shared/data/pdfs/py-pdf-sample-files/011-google-doc-document/google-doc-document.pdf"
)


def _harbour() -> Site:
    site = Site()
    site.pages["/"] = Page(page("Home", "Harbour index.", "/guide.html", "/tides.html"))
    site.pages["/guide.html"] = Page(page("Guide", "The harbour opens at dawn.", "/"))
    site.pages["/tides.html"] = Page(page("Tides", "Spring tides flood the slipway."))
    return site


def test_the_same_site_is_one_source_however_its_address_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    with serving(_harbour()) as site:
        add_web(capsys, data, site.url("/"), "--name", "harbour")
        bare = site.url("/").rstrip("/")  # no path: the same start page

        code, _, err = run(capsys, "sources", "add", "web", bare, "--name", "h", "--data-dir", data)

        assert code == 2
        assert "is already synced by source 'harbour'" in " ".join(err.split())


def test_removing_one_of_two_sources_keeps_what_the_other_syncs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two sources over one site (one starting at its guide, which links home), both synced
    data = str(tmp_path / "data")
    with serving(_harbour()) as site:
        add_web(capsys, data, site.url("/"), "--name", "harbour")
        add_web(capsys, data, site.url("/guide.html"), "--name", "guide", "--depth", "1")
        assert run(capsys, "sync", "--data-dir", data)[0] == 0
        everything = {site.url(p) for p in ("/", "/guide.html", "/tides.html")}
        assert set(status_documents(capsys, data)) == everything

        # When the guide's source is removed
        code, out, err = run(capsys, "sources", "rm", "guide", "--data-dir", data)

        # Then the pages the other source syncs stay indexed (before: all three were removed)
        assert code == 0, err
        assert "kept 2 documents source 'harbour' syncs too" in " ".join(out.split())
        assert set(status_documents(capsys, data)) == everything
        code, out, _ = run(capsys, "sync", "--data-dir", data)
        assert code == 0, out
        assert last_sync(capsys, data)["unchanged"] == 3


def test_a_page_no_longer_linked_from_one_source_stays_when_another_syncs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    site = _harbour()
    with serving(site):
        add_web(capsys, data, site.url("/"), "--name", "harbour")
        add_web(capsys, data, site.url("/guide.html"), "--name", "guide", "--depth", "0")
        assert run(capsys, "sync", "harbour", "--data-dir", data)[0] == 0
        assert run(capsys, "sync", "guide", "--data-dir", data)[0] == 0
        # When the home page stops linking to the guide and the home's source syncs
        site.pages["/"] = Page(page("Home", "Harbour index.", "/tides.html"))

        code, out, _ = run(capsys, "sync", "harbour", "--data-dir", data)

        # Then the guide, which the other source syncs, is kept
        assert code == 0, out
        assert f"{site.url('/guide.html')}: kept: source 'guide' syncs it too" in out
        assert site.url("/guide.html") in status_documents(capsys, data)


def test_a_synced_document_removed_by_hand_comes_back_at_the_next_sync(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a synced site, one of whose pages is then removed from the index with `docchat rm`
    data = str(tmp_path / "data")
    with serving(_harbour()) as site:
        add_web(capsys, data, site.url("/"), "--name", "harbour")
        assert run(capsys, "sync", "--data-dir", data)[0] == 0
        tides = site.url("/tides.html")
        assert run(capsys, "rm", doc_id_for(tides), "--data-dir", data)[0] == 0

        # When the source is synced again (the site unchanged: it would answer 304)
        code, out, _ = run(capsys, "sync", "--data-dir", data)

        # Then the page is fetched and indexed again (before: "unchanged (304)", and gone)
        assert code == 0, out
        assert f"{tides}: indexed" in out
        assert tides in status_documents(capsys, data)
        assert (last_sync(capsys, data)["fetched"], last_sync(capsys, data)["unchanged"]) == (1, 2)


def test_a_pdf_the_site_renames_keeps_its_copy_for_the_viewer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not REPORT_PDF.is_file():
        pytest.skip(f"a real PDF is not available: {REPORT_PDF} is absent")
    pdf = REPORT_PDF.read_bytes()
    data = tmp_path / "data"
    site = Site()
    site.pages["/"] = Page(page("Home", "Reports.", "/report.pdf"))
    site.pages["/report.pdf"] = Page(pdf, PDF)
    with serving(site):
        add_web(capsys, str(data), site.url("/"))
        assert run(capsys, "sync", "--data-dir", str(data))[0] == 0
        # When the site renames the PDF (the same bytes) and links the new name
        del site.pages["/report.pdf"]
        site.pages["/annual%20report.pdf"] = Page(pdf, PDF)
        site.pages["/"] = Page(page("Home", "Reports.", "/annual%20report.pdf"))

        code, out, _ = run(capsys, "sync", "--data-dir", str(data))

        # Then the sync says what it copied, and the viewer opens the PDF under its new name
        # (before: its copy was kept under the old document's id, and removed with it)
        assert code == 0, out
        renamed = site.url("/annual%20report.pdf")
        assert f"{renamed}: the same content as {site.url('/report.pdf')}" in " ".join(out.split())
        with served_app(data, monkeypatch) as app:
            file = httpx.get(f"{app}/documents/{doc_id_for(renamed)}/file", timeout=10)
        assert file.status_code == 200, file.text
        assert file.content == pdf
