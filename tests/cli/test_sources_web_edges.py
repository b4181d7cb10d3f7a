"""The web source where a site is not tidy: a start URL that is not there, a file linked from
the last page the depth reaches, a page that redirects, a redirect loop. Each through
`docchat sync` against a real site on 127.0.0.1 (tests/cli/website.py)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.cli.run import add_web, run, run_flat, status_documents
from tests.cli.website import PDF, Page, Site, page, serving
from tests.conftest import REPO

REPORT_PDF = (
    REPO.parent
    / "shared/data/pdfs/py-pdf-sample-files/011-google-doc-document/google-doc-document.pdf"
)


def test_a_start_page_that_is_not_there_fails_and_keeps_what_was_synced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    site = Site()
    site.pages["/"] = Page(page("Home", "Harbour index.", "/guide.html"))
    site.pages["/guide.html"] = Page(page("Guide", "The harbour opens at dawn."))
    with serving(site):
        add_web(capsys, data, site.url("/"), "--name", "h")
        assert run(capsys, "sync", "--data-dir", data)[0] == 0
        del site.pages["/"]  # the site moved its home page, or the URL was mistyped

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 1, out + err
        assert "404, the start page is not there: check the URL" in out + err
        assert set(status_documents(capsys, data)) == {site.url("/"), site.url("/guide.html")}

        mistyped = str(tmp_path / "mistyped")
        add_web(capsys, mistyped, site.url("/hoem.html"))
        code, out, err = run(capsys, "sync", "--data-dir", mistyped)
        assert code == 1, out + err
        assert "the start page is not there: check the URL" in out + err


def test_a_file_linked_from_the_last_depth_is_synced_with_its_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not REPORT_PDF.is_file():
        pytest.skip(f"a real PDF is not available: {REPORT_PDF} is absent")
    data = str(tmp_path / "data")
    site = Site()
    site.pages["/"] = Page(page("Home", "Harbour index.", "/guide.html"))
    guide = page("Guide", "The harbour opens at dawn.", "/report.pdf", "/further.html")
    site.pages["/guide.html"] = Page(guide)
    site.pages["/report.pdf"] = Page(REPORT_PDF.read_bytes(), PDF)
    site.pages["/further.html"] = Page(page("Further", "One link too deep."))
    with serving(site):
        add_web(capsys, data, site.url("/"), "--depth", "1")

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 0, out + err
        assert set(status_documents(capsys, data)) == {
            site.url(p) for p in ("/", "/guide.html", "/report.pdf")
        }
        assert "/further.html" not in site.paths()


def test_a_redirected_page_is_cited_by_where_it_led_and_read_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    site = Site()
    site.pages["/"] = Page(page("Home", "Harbour index.", "/old.html", "/new.html"))
    site.pages["/old.html"] = Page(b"", status=301, location="/new.html")
    site.pages["/new.html"] = Page(page("Guide", "The harbour opens at dawn."))
    with serving(site):
        add_web(capsys, data, site.url("/"))

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 0, out + err
        assert set(status_documents(capsys, data)) == {site.url("/"), site.url("/new.html")}
        code, out, err = run(capsys, "sync", "--data-dir", data)
        assert code == 0, out + err
        assert "0 fetched, 2 unchanged, 0 removed, 0 failed" in out
        assert set(status_documents(capsys, data)) == {site.url("/"), site.url("/new.html")}


def test_a_redirect_loop_is_named_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    site = Site()
    site.pages["/"] = Page(page("Home", "Harbour index.", "/loop.html"))
    site.pages["/loop.html"] = Page(b"", status=302, location="/loop.html")
    with serving(site):
        add_web(capsys, data, site.url("/"))

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 1, out + err
        assert (
            f"{site.url('/loop.html')}: failed: redirects in a loop: fix or remove the link" in out
        )
        assert set(status_documents(capsys, data)) == {site.url("/")}


def test_a_file_whose_url_is_percent_encoded_shows_its_own_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not REPORT_PDF.is_file():
        pytest.skip(f"a real PDF is not available: {REPORT_PDF} is absent")
    data = str(tmp_path / "data")
    site = Site()
    encoded = "/docs/rapport%20%C3%A9t%C3%A9%20%231.pdf"  # "rapport été #1.pdf" as a link has it
    site.pages["/"] = Page(page("Home", "Harbour index.", encoded))
    site.pages[encoded] = Page(REPORT_PDF.read_bytes(), PDF)
    with serving(site):
        add_web(capsys, data, site.url("/"))
        assert run(capsys, "sync", "--data-dir", data)[0] == 0

        code, out, err = run(capsys, "status", "--json", "--data-dir", data)

        assert code == 0, err
        names = {d["source"]: d["file_name"] for d in json.loads(out)["documents"]}
        assert names[site.url(encoded)] == "rapport été #1.pdf"  # the link still works
        # a page is named as it was read, as on the stack (where that is its object's name)
        assert names[site.url("/")] == "index.html"
        code, out, err = run(capsys, "status", "--data-dir", data)
        assert "rapport été #1.pdf" in out


def test_a_page_linked_by_two_spellings_of_its_name_is_requested_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a home page linking to one page as UTF-8 and as its percent-encoding
    data = str(tmp_path / "data")
    site = Site()
    site.pages["/"] = Page(page("Home", "Index.", "/Übersicht.html", "/%C3%9Cbersicht.html"))
    site.pages["/%C3%9Cbersicht.html"] = Page(page("Übersicht", "Die Fähre fährt stündlich."))
    with serving(site):
        add_web(capsys, data, site.url("/"))
        for _ in range(2):  # the first sync, then one asking with the page's validators
            site.requests.clear()

            # When the site is synced
            code, out, err = run(capsys, "sync", "--data-dir", data)

            # Then the page is requested once (before: twice, the second without validators)
            assert code == 0, out + err
            assert site.paths().count("/%C3%9Cbersicht.html") == 1, site.paths()
    assert set(status_documents(capsys, data)) == {site.url("/"), site.url("/%C3%9Cbersicht.html")}


def test_a_crawls_bounds_out_of_range_are_refused_saying_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    add = ["sources", "add", "web", "https://docs.example.org/", "--data-dir", data]

    none = run_flat(capsys, *add, "--max-pages", "0")
    deep = run_flat(capsys, *add, "--depth", "50")

    # Before: a pydantic message, then how to write a source's name
    assert none[0] == 2 and "'0' is not a number of pages: give 1 or more" in none[2]
    assert deep[0] == 2 and "give --depth from 0 to 20" in deep[2]
    assert "a name is" not in none[2] + deep[2]
    assert run(capsys, "sources", "--json", "--data-dir", data)[1].strip() == "[]"


def test_a_site_that_cannot_be_reached_is_named_once_in_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/"
    add_web(capsys, data, url)

    code, out, _ = run(capsys, "sync", "--data-dir", data)

    # Before: "...robots.txt: failed: ...robots.txt: cannot connect"
    assert code == 1
    assert f"{url}robots.txt: failed: cannot connect (ConnectionError): check the URL" in out
    assert out.count(f"{url}robots.txt") == 1
