"""The documents panel holds its own contents at the widths people use (issue 44: "Upload
documents" ran 15 px past the 320 px sidebar at 1280 px, under the chat's edge)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.browser import expect, launched_chromium
from tests.web.serving import LocalServer

# What of the panel sticks out past its right edge (its padding excluded): a list of names.
OVERRUNS = """
() => {
  const panel = document.getElementById("docs");
  const box = panel.getBoundingClientRect();
  const right = box.right - parseFloat(getComputedStyle(panel).paddingRight) + 0.5;
  return [...panel.querySelectorAll("*")]
    .filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > right)
    .map((e) => e.id || e.className || e.tagName);
}
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    with LocalServer(tmp_path_factory.mktemp("panel-data")) as server:
        for browser in launched_chromium():
            yield browser, server.url


@pytest.mark.parametrize("width", [1280, 1024, 800, 390])
def test_the_documents_panel_holds_its_upload_button(served: tuple[Any, str], width: int) -> None:
    browser, url = served
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(url)
    upload = page.get_by_text("Upload documents")
    # (and the welcome names every kind of file the button takes, not PDFs alone)
    expect(page.locator("#suggestions")).to_contain_text("PDF, Word, PowerPoint, Excel, HTML")
    if width < 800:  # a phone's panel is a drawer, opened from the top bar
        page.locator(".docs-toggle").click()
    expect(upload).to_be_visible()
    expect(page.locator("#docs-empty")).to_be_visible()
    assert page.evaluate(OVERRUNS) == []
    page.close()
