"""A synced web site's documents on the page, in headless Chromium over a real uvicorn: each
named by its address (a site's home page too, whose path ends in "/"), and a quote's source a
link to the page where it lives, beside the viewer (issue 47). The site is tests/cli/website.py's
server on 127.0.0.1, synced through docchat.sources as `docchat sync` does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docchat.sources.store import SourceEntry, SourcesFile, WebSource, save_sources
from docchat.sources.sync import Syncer
from tests.cli.website import Page, Site, page, serving
from tests.conftest import WordEmbedder
from tests.web.browser import expect
from tests.web.serving import LocalServer

ANSWER_TIMEOUT_MS = 20_000


@pytest.fixture
def synced(tmp_path: Path) -> Iterator[tuple[LocalServer, Site]]:
    site = Site(
        pages={
            "/": Page(
                page(
                    "Harbour handbook",
                    "Welcome to the harbour.",
                    *("/guide.html", "/tides.html", "/lost.html"),
                )
            ),
            "/guide.html": Page(page("Mooring guide", "Moor the dinghy at pontoon seven.")),
            "/tides.html": Page(page("Tides", "Spring tides."), status=503),
        }
    )
    with LocalServer(tmp_path / "data") as server, serving(site) as web:
        entry = SourceEntry(source=WebSource(name="harbour", url=web.url("/"), rate=0))
        syncer = Syncer(
            shelf=server.uploads.shelf, embedder=WordEmbedder(), settings=server.uploads.settings
        )
        report = syncer.sync(entry).last_sync
        assert report is not None, report
        assert (report.fetched, report.failed, report.skipped) == (2, 1, 1), report
        save_sources(server.uploads.settings.data_dir, SourcesFile(sources={"harbour": entry}))
        yield server, web


def test_a_synced_page_is_named_by_its_address_and_its_quote_links_to_it(
    browser: Any, synced: tuple[LocalServer, Site]
) -> None:
    server, web = synced
    host = web.url("/").removeprefix("http://")
    page = browser.new_context().new_page()
    page.goto(server.url)

    # The documents panel names each page by its address, the home page included (its path
    # ends in "/": by the last part of its source it had no name at all)
    names = page.locator("#doc-list li.doc .doc-name")
    expect(names).to_have_count(2)
    assert sorted(names.all_inner_texts()) == sorted([host, f"{host}guide.html"])

    # When an answer quotes the guide and its source is opened
    page.locator("#question").fill("Where do I moor the dinghy?")
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    answer.locator(".chip", has_text="Mooring guide").first.click()

    # Then the quote's source links to the page on its site, opened apart from docchat
    origin = answer.locator(".quote figcaption a.quote-origin")
    expect(origin).to_have_attribute("href", web.url("/guide.html"))
    expect(origin).to_have_attribute("target", "_blank")
    expect(origin).to_have_attribute("rel", "noopener noreferrer")
    expect(origin).to_have_text(f"{host}guide.html")
    page.context.close()


def test_the_documents_panel_shows_each_source_and_its_last_failure(
    browser: Any, synced: tuple[LocalServer, Site]
) -> None:
    server, web = synced
    page = browser.new_context().new_page()
    page.goto(server.url)

    # The panel lists the site the collection's documents are synced from
    source = page.locator("#sources li.source")
    expect(source).to_have_count(1)
    expect(source.locator(".source-name")).to_have_text("harbour")
    expect(source.locator(".badge")).to_have_text("web")
    link = source.locator("a.source-url")
    expect(link).to_have_attribute("href", web.url("/"))
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    # with what its last sync did, and the page that failed with the reason
    expect(source.locator(".source-sync")).to_contain_text("2 documents · last sync")
    expect(source.locator(".source-sync")).to_contain_text(
        "2 fetched, 0 unchanged, 0 removed, 1 failed, 1 skipped"
    )
    expect(source.locator(".source-failure")).to_contain_text(f"{web.url('/tides.html')}: 503")
    # and the broken link it skipped, which is not a failure (before: not shown at all)
    expect(source.locator(".source-skip")).to_have_text(
        f"Last skipped: {web.url('/lost.html')}: 404, a broken link on the site"
    )

    page.context.close()
