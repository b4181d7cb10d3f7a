"""The page, served as `docchat serve` serves it, lists a document `docchat ingest` is working on
in another process (issue 44): at its stage while it works, gone once the work ends without a
record (a killed ingest), listed by its record once indexed. Headless Chromium over a real
uvicorn; the other process's claim is made here, as ingest/claims.py makes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docchat.ingest import claims
from tests.conftest import WordEmbedder
from tests.mcpkit import ingested, served_as_docchat_serve
from tests.web.browser import expect

NEW_ID = "annual-report-2024-0a1b2c3d"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path / "data"
    ingested(data_dir, WordEmbedder())
    with served_as_docchat_serve(data_dir) as url:
        yield f"{url}/", data_dir


def test_the_page_lists_a_document_being_ingested_at_its_stage(
    browser: Any, served: tuple[str, Path]
) -> None:
    url, data_dir = served
    source = str(data_dir.parent / "Annual report 2024.pdf")
    held = claims.claim(data_dir, NEW_ID, source=source)
    assert held is not None
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        with held:
            # Given `docchat ingest` embedding a new filing, when the page is opened
            held.report("embed", 120, 600)
            page.goto(url)

            # Then it is listed, by its file's name, at its stage, beside the indexed ones
            row = page.locator("#doc-list li.doc", has_text="Annual report 2024.pdf")
            expect(row).to_have_attribute("data-status", "EMBEDDING")
            expect(row.locator(".badge")).to_have_text("EMBEDDING")
            expect(page.locator("#doc-list li.doc[data-status=INDEXED]")).to_have_count(2)

        # When the ingest ends without indexing it (killed), the page, polling a busy list,
        # drops the row within seconds
        expect(row).to_have_count(0, timeout=10_000)
        expect(page.locator("#doc-list li.doc")).to_have_count(2)
    finally:
        context.close()
