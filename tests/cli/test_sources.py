"""`docchat sources add web` / `docchat sync` against a real site on 127.0.0.1 (tests/cli/
website.py) serving real PDF and Office files from ../shared/data: what is synced is searched
and cited by its URL, through the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from docchat.errors import StorageFullError
from docchat.sources import sync as sync_module
from tests.cli.run import last_sync, run, served_app, status_documents
from tests.cli.website import DOCX, PDF, Page, Site, page, serving
from tests.conftest import REPO

SHARED = REPO.parent / "shared" / "data"
REPORT_PDF = SHARED / "pdfs/py-pdf-sample-files/011-google-doc-document/google-doc-document.pdf"
MEMO_DOCX = SHARED / "office/python-docx/test.docx"
ROBOTS = b"User-agent: *\nDisallow: /private\n"


@pytest.fixture
def files() -> tuple[bytes, bytes]:
    if not REPORT_PDF.is_file() or not MEMO_DOCX.is_file():
        pytest.skip(f"real PDF and Office files not available: {SHARED} is absent")
    return REPORT_PDF.read_bytes(), MEMO_DOCX.read_bytes()


def _site(files: tuple[bytes, bytes]) -> Site:
    """A home page linking to a guide, a PDF, a .docx, a disallowed page, a page without
    validators, a page off the site and a chain of pages three links deep."""
    pdf, docx = files
    home = page(
        "Harbour handbook",
        "Welcome to the harbour handbook.",
        "/guide.html",
        "/docs/report.pdf",
        "/docs/memo.docx",
        "/private/secret.html",
        "/notes",
        "http://example.invalid/elsewhere.html",
        "/deep/one.html#top",
    )
    return Site(
        pages={
            "/robots.txt": Page(ROBOTS, "text/plain"),
            "/": Page(home),
            "/guide.html": Page(page("Mooring guide", "Moor the dinghy at pontoon seven.")),
            "/docs/report.pdf": Page(pdf, PDF, validator="last-modified"),
            "/docs/memo.docx": Page(docx, DOCX),
            "/private/secret.html": Page(page("Secret", "The vault code is 1234.")),
            "/notes": Page(page("Tide notes", "Spring tides flood the slipway."), validator="none"),
            "/deep/one.html": Page(page("One", "Lighthouse one.", "/deep/two.html")),
            "/deep/two.html": Page(page("Two", "Lighthouse two.", "/deep/three.html")),
            "/deep/three.html": Page(page("Three", "Lighthouse three.")),
        }
    )


def _search(capsys: pytest.CaptureFixture[str], data: str, query: str) -> list[str]:
    code, out, err = run(capsys, "search", query, "--json", "--top-k", "3", "--data-dir", data)
    assert code == 0, err
    return [row["source"] for row in json.loads(out)]


def _counts(last: dict[str, object]) -> dict[str, object]:
    names = ("fetched", "unchanged", "removed", "failed", "skipped")
    return {k: last[k] for k in names}


def test_sync_indexes_pages_and_files_citing_their_urls_and_skips_unchanged(
    files: tuple[bytes, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    with serving(_site(files)) as site:
        add = ["sources", "add", "web", site.url("/"), "--depth", "1", "--rate", "0"]
        assert run(capsys, *add, "--name", "harbour", "--data-dir", data)[0] == 0

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 0, out + err
        last = last_sync(capsys, data)
        assert _counts(last) == {
            "fetched": 6,  # home, guide, PDF, .docx, notes, deep/one (depth 1)
            "unchanged": 0,
            "removed": 0,
            "failed": 0,
            "skipped": 1,
        }
        secret = site.url("/private/secret.html")
        assert last["skip_note"] == f"{secret}: robots.txt disallows /private/secret.html"
        requested = site.paths()
        assert not [p for p in requested if p.startswith("/private")]
        assert "/deep/two.html" not in requested  # two links from the start: beyond depth 1
        assert requested.count("/deep/one.html") == 1  # the #top fragment is the same page
        assert all(r.headers.get("User-Agent") == "docchat" for r in site.requests)
        assert _search(capsys, data, "Beautiful is better than ugly")[0] == site.url(
            "/docs/report.pdf"
        )
        assert _search(capsys, data, "python-docx was here")[0] == site.url("/docs/memo.docx")
        assert _search(capsys, data, "moor the dinghy at pontoon seven")[0] == site.url(
            "/guide.html"
        )
        code, answered, err = run(
            capsys, "ask", "Where do I moor the dinghy?", "--json", "--data-dir", data
        )
        assert code == 0, err
        citations = json.loads(answered)["citations"]
        assert citations
        assert {c["source"] for c in citations} == {site.url("/guide.html")}
        code, answered, err = run(capsys, "ask", "Where do I moor the dinghy?", "--data-dir", data)
        assert code == 0, err
        assert f"({site.url('/guide.html')})" in answered  # the Sources line names the URL
        revisions = status_documents(capsys, data)
        assert all(d["status"] == "INDEXED" for d in revisions.values())

        # When: the site has not changed since.
        site.requests.clear()
        code, out, err = run(capsys, "sync", "harbour", "--data-dir", data)

        # Then: every page is asked for conditionally, and nothing is ingested again.
        assert code == 0, out + err
        assert _counts(last_sync(capsys, data)) == {
            "fetched": 0,
            "unchanged": 6,
            "removed": 0,
            "failed": 0,
            "skipped": 1,
        }
        asked = {r.path: r.headers for r in site.requests}
        assert asked["/guide.html"]["If-None-Match"].startswith('"')
        assert "If-Modified-Since" in asked["/docs/report.pdf"]
        assert "If-None-Match" not in asked["/notes"]  # no validators: its bytes are compared
        assert status_documents(capsys, data) == revisions


def test_sync_reingests_a_changed_page_and_removes_pages_gone_from_the_site(
    files: tuple[bytes, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    with serving(_site(files)) as site:
        other = ["sources", "add", "web", site.url("/guide.html"), "--depth", "0"]
        assert run(capsys, *other, "--data-dir", data)[0] == 0  # another source, not synced
        site.pages["/"] = Page(page("Home", "Harbour index.", "/links.html"))
        site.pages["/links.html"] = Page(page("Links", "All pages.", "/guide.html", "/notes"))
        add = ["sources", "add", "web", site.url("/"), "--depth", "2", "--rate", "0"]
        assert run(capsys, *add, "--name", "deep", "--data-dir", data)[0] == 0
        assert run(capsys, "sync", "deep", "--data-dir", data)[0] == 0
        assert set(status_documents(capsys, data)) == {
            site.url(p) for p in ("/", "/links.html", "/guide.html", "/notes")
        }
        before = status_documents(capsys, data)

        # When: the guide changes, the notes page is no longer linked, and the links page is
        # gone (404) while the home page now links the guide directly.
        site.pages["/guide.html"] = Page(page("Mooring guide", "Moor the ketch at pontoon nine."))
        site.pages["/"] = Page(page("Home", "Harbour index.", "/links.html", "/guide.html"))
        del site.pages["/links.html"]
        code, out, err = run(capsys, "sync", "deep", "--data-dir", data)

        # Then
        assert code == 0, out + err
        assert _counts(_last_sync_of(capsys, data, "deep")) == {
            "fetched": 2,  # the home page and the guide changed
            "unchanged": 0,
            "removed": 2,  # the links page (404) and the notes (no longer linked)
            "failed": 0,
            "skipped": 0,
        }
        after = status_documents(capsys, data)
        assert set(after) == {site.url("/"), site.url("/guide.html")}
        assert after[site.url("/guide.html")]["revision"] == 2
        assert before[site.url("/guide.html")]["revision"] == 1
        assert _search(capsys, data, "ketch at pontoon nine")[0] == site.url("/guide.html")
        found = _search(capsys, data, "spring tides flood the slipway")
        assert site.url("/notes") not in found

        # When: the source is removed, its documents go with it; the other source stays.
        code, out, err = run(capsys, "sources", "rm", "deep", "--data-dir", data)

        assert code == 0, err
        assert "removed deep and 2 documents synced from it" in out
        assert status_documents(capsys, data) == {}
        code, out, _ = run(capsys, "sources", "--json", "--data-dir", data)
        assert [s["source"]["name"] for s in json.loads(out)] == ["127.0.0.1-" + site.base[17:]]


def _last_sync_of(capsys: pytest.CaptureFixture[str], data: str, name: str) -> dict[str, object]:
    code, out, err = run(capsys, "sources", "--json", "--data-dir", data)
    assert code == 0, err
    (last,) = [s["last_sync"] for s in json.loads(out) if s["source"]["name"] == name]
    found: dict[str, object] = last
    return found


def test_sync_reports_a_failing_page_and_keeps_what_is_indexed(
    files: tuple[bytes, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    with serving(_site(files)) as site:
        site.pages["/"] = Page(page("Home", "Harbour index.", "/guide.html", "/broken.html"))
        site.pages["/broken.html"] = Page(b"", status=500)
        add = ["sources", "add", "web", site.url("/"), "--rate", "0", "--name", "h"]
        assert run(capsys, *add, "--data-dir", data)[0] == 0

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 1, out + err
        assert set(status_documents(capsys, data)) == {site.url("/"), site.url("/guide.html")}
        code, out, err = run(capsys, "sources", "--data-dir", data)
        assert code == 0, err
        broken = site.url("/broken.html")
        assert (
            f"last failure: {broken}: 500 Internal Server Error: the server failed; sync again "
            "later" in out
        )
        assert "1 failed" in out

        # When: the whole site fails (robots.txt too).
        for served in site.pages.values():
            served.status = 503
        code, out, err = run(capsys, "sync", "h", "--data-dir", data)

        # Then: the sync fails, and what it had indexed stays.
        assert code == 1, out + err
        assert set(status_documents(capsys, data)) == {site.url("/"), site.url("/guide.html")}
        assert last_sync(capsys, data)["last_failure"] == (
            f"{site.url('/robots.txt')}: the server failed (503): sync again later"
        )


def test_sync_reads_a_sitemap_index_and_honours_max_pages_and_rate(
    files: tuple[bytes, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    with serving(_site(files)) as site:
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        site.pages["/sitemap.xml"] = Page(
            f'<?xml version="1.0"?><sitemapindex {ns}><sitemap><loc>{site.url("/pages.xml")}'
            "</loc></sitemap></sitemapindex>".encode(),
            "application/xml",
        )
        locs = "".join(
            f"<url><loc>{site.url(p)}</loc></url>"
            for p in ("/guide.html", "/deep/one.html", "/deep/three.html", "/notes")
        )
        site.pages["/pages.xml"] = Page(f"<urlset {ns}>{locs}</urlset>".encode(), "text/xml")
        add = ["sources", "add", "web", site.url("/sitemap.xml"), "--depth", "0"]
        code, _, err = run(capsys, *add, "--max-pages", "3", "--rate", "0.05", "--data-dir", data)
        assert code == 0, err

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 0, out + err
        assert set(status_documents(capsys, data)) == {
            site.url(p) for p in ("/guide.html", "/deep/one.html", "/deep/three.html")
        }
        assert site.paths() == [
            "/robots.txt",
            "/sitemap.xml",
            "/pages.xml",
            "/guide.html",
            "/deep/one.html",
            "/deep/three.html",
        ]
        times = [r.at for r in site.requests]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps) >= 0.05, gaps


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["sources", "add", "web", "ftp://example.org/"], "is not a web address docchat can sync"),
        (["sources", "add", "web", "example.org"], "give an http:// or https:// URL"),
        (["sync", "nowhere"], "there is no source called 'nowhere'"),
        (["sources", "add", "web", "http://127.0.0.1:8/", "--name", "site"], "already a source"),
        (["sources", "add", "web", "http://127.0.0.1:8/", "--name", "a b"], "a name is 1-64"),
        (["sources", "add", "web", "http://127.0.0.1:9/#top"], "already synced by source 'site'"),
    ],
)
def test_sources_refuses_bad_input_with_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    data = str(tmp_path / "data")
    add = ["sources", "add", "web", "http://127.0.0.1:9/", "--name", "site", "--data-dir", data]
    assert run(capsys, *add)[0] == 0

    code, out, err = run(capsys, *argv, "--data-dir", data)

    assert code == 2, out + err
    assert says in " ".join(err.split())
    assert "Traceback" not in err


def test_sync_refuses_a_file_over_the_size_limit_and_a_start_robots_disallows(
    files: tuple[bytes, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = str(tmp_path / "data")
    pdf, _ = files
    monkeypatch.setattr("docchat.sources.crawl.MAX_UPLOAD_BYTES", len(pdf) - 1)
    with serving(_site(files)) as site:
        site.pages["/"] = Page(page("Home", "Harbour index.", "/docs/report.pdf"))
        add = ["sources", "add", "web", site.url("/"), "--rate", "0", "--name", "h"]
        assert run(capsys, *add, "--data-dir", data)[0] == 0
        secret = ["sources", "add", "web", site.url("/private/"), "--rate", "0", "--name", "p"]
        assert run(capsys, *secret, "--data-dir", data)[0] == 0

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 1, out + err
        assert set(status_documents(capsys, data)) == {site.url("/")}
        report = site.url("/docs/report.pdf")
        assert _last_sync_of(capsys, data, "h")["last_failure"] == (
            f"{report}: over the size limit of {len(pdf) - 1} bytes, not fetched"
        )
        assert _last_sync_of(capsys, data, "p")["last_failure"] == (
            f"{site.url('/private/')}: robots.txt disallows /private/ to docchat: start elsewhere"
        )
        assert not [p for p in site.paths() if p.startswith("/private")]


def test_a_sync_stopped_by_a_full_disk_keeps_what_was_indexed_and_says_why(
    files: tuple[bytes, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = str(tmp_path / "data")
    with serving(_site(files)) as site:
        site.pages["/"] = Page(page("Home", "Harbour index.", "/guide.html", "/notes"))
        add = ["sources", "add", "web", site.url("/"), "--rate", "0", "--name", "h"]
        assert run(capsys, *add, "--data-dir", data)[0] == 0
        assert run(capsys, "sync", "--data-dir", data)[0] == 0
        before = status_documents(capsys, data)
        # The disk fills while the second page is written (the first is ingested for real).
        real = sync_module.ingest_bytes
        calls: list[str] = []

        def filling(data: bytes, **kwargs: Any) -> Any:
            calls.append(kwargs["source"])
            if len(calls) == 2:
                raise StorageFullError("the disk holding the index is full: free some space")
            return real(data, **kwargs)

        monkeypatch.setattr(sync_module, "ingest_bytes", filling)
        site.pages["/"] = Page(page("Home", "Harbour index, now longer.", "/guide.html"))
        site.pages["/guide.html"] = Page(page("Mooring guide", "Moor the ketch at pontoon nine."))

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 2, out + err
        assert "the disk holding the index is full" in err
        after = status_documents(capsys, data)
        assert set(after) == set(before)  # the notes page, no longer linked, is not removed
        assert after[site.url("/")]["revision"] == 2
        assert after[site.url("/guide.html")] == before[site.url("/guide.html")]
        last = last_sync(capsys, data)
        assert last["last_failure"] == (
            "the sync stopped: the disk holding the index is full: free some space"
        )
        assert (last["fetched"], last["removed"]) == (1, 0)


def test_the_viewer_shows_a_synced_pdf_until_the_site_drops_it(
    files: tuple[bytes, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a site linking to a real PDF, synced into a data directory
    pdf, _ = files
    data = tmp_path / "data"
    site = Site(
        pages={
            "/": Page(page("Harbour", "The harbour's reports.", "/docs/report.pdf")),
            "/docs/report.pdf": Page(pdf, PDF),
        }
    )
    with serving(site) as web:
        add = ["sources", "add", "web", web.url("/"), "--rate", "0", "--data-dir", str(data)]
        assert run(capsys, *add)[0] == 0
        assert run(capsys, "sync", "--data-dir", str(data))[0] == 0
        doc_id = status_documents(capsys, str(data))[web.url("/docs/report.pdf")]["doc_id"]
        with served_app(data, monkeypatch) as app:
            file = f"{app}/documents/{doc_id}/file"

            # When the viewer opens the cited PDF, then it reads the bytes the site served
            # (before: "no longer where it was indexed from", the source being a URL)
            response = httpx.get(file, timeout=10)
            assert response.status_code == 200, response.text
            assert response.content == pdf

            # When the site no longer links to it and the source is synced again
            site.pages["/"] = Page(page("Harbour", "No reports this year."))
            assert run(capsys, "sync", "--data-dir", str(data))[0] == 0

            # Then the document is gone, and so is its copy
            assert httpx.get(file, timeout=10).status_code == 404
            assert not list((data / "synced").glob("*.pdf"))


def test_health_reports_each_sources_last_sync_and_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a source whose last sync met a failing page
    data = tmp_path / "data"
    site = Site(
        pages={
            "/": Page(page("Home", "Harbour index.", "/guide.html", "/broken.html")),
            "/guide.html": Page(page("Mooring guide", "Moor the dinghy at pontoon seven.")),
            "/broken.html": Page(b"", status=500),
        }
    )
    with serving(site) as web:
        add = ["sources", "add", "web", web.url("/"), "--rate", "0", "--name", "harbour"]
        assert run(capsys, *add, "--collection", "docks", "--data-dir", str(data))[0] == 0
        assert run(capsys, "sync", "--data-dir", str(data))[0] == 1
        with served_app(data, monkeypatch) as app:
            # When /health is asked, as `docchat serve` answers it
            health = httpx.get(f"{app}/health", timeout=10)

    # Then it is healthy (a site's failure is not the server's) and says what the sync did
    assert health.status_code == 200, health.text
    checks = health.json()["checks"]
    (source,) = checks["sources"]["sources"]
    assert checks["sources"]["status"] == "ok"
    assert {k: source[k] for k in ("name", "kind", "url", "collection", "documents")} == {
        "name": "harbour",
        "kind": "web",
        "url": web.url("/"),
        "collection": "docks",
        "documents": 2,
    }
    last = source["last_sync"]
    assert (last["fetched"], last["failed"]) == (2, 1)
    assert last["last_failure"].startswith(f"{web.url('/broken.html')}: 500")
