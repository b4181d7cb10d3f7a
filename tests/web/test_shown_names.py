"""File names as the page shows them, in headless Chromium (Debian's) over a real uvicorn: a
name with bidirectional controls cannot pass for another ("report<U+202E>gnp.pdf", with the
control itself, reads as a PNG), and a long name keeps every button on screen, on a desktop and
on a phone (the screenshots of the long name go to the test's temporary folder, for a person to
look at).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.pdfgen import make_pdf
from tests.web.browser import expect
from tests.web.serving import LocalServer

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
INDEXING_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 20_000
SPOOFED = "report\u202egnp.pdf"
LONG = (
    "Quarterly_financial_statements_and_management_discussion_and_analysis_"
    "2024_Q3_final_version_approved_by_the_board.pdf"
)
# Unicode's Bidi_Control characters (ALM, LRM, RLM, embeddings, overrides, isolates).
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Every control a person can reach that lies, even partly, outside the window's width.
OFF_SCREEN = """
() => [...document.querySelectorAll("button, label.button, input, textarea")]
  .filter((node) => {
    const box = node.getBoundingClientRect();
    return box.width && box.height && getComputedStyle(node).visibility === "visible";
  })
  .filter((node) => {
    const box = node.getBoundingClientRect();
    return box.left < 0 || box.right > document.documentElement.clientWidth;
  })
  .map((node) => node.getAttribute("aria-label") || node.textContent.trim().slice(0, 60))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    with LocalServer(tmp_path_factory.mktemp("names-data")) as running:
        yield running


def _page(browser: Any, server: LocalServer, viewport: dict[str, int]) -> Any:
    page = browser.new_context(viewport=viewport).new_page()
    page.goto(server.url)
    return page


def _upload(page: Any, name: str, *, shown: str, sentence: str) -> Any:
    """The document's row, found by the name it `shown` with, once it is INDEXED."""
    pdf = make_pdf([[("body", sentence)]])
    page.set_input_files(
        "#file", files=[{"name": name, "mimeType": "application/pdf", "buffer": pdf}]
    )
    # (not the row of the upload itself, which goes once the list has the document)
    row = page.locator("#doc-list li.doc:not([data-status=UPLOADING])", has_text=shown)
    expect(row).to_have_attribute("data-status", "INDEXED", timeout=INDEXING_TIMEOUT_MS)
    return row


def _ask(page: Any, question: str) -> Any:
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    return answer


def test_a_name_with_bidi_controls_is_shown_escaped_and_served_as_it_is(
    browser: Any, server: LocalServer
) -> None:
    page = _page(browser, server, DESKTOP)
    # Given a PDF uploaded under a name whose U+202E turns "gnp.pdf" into "fdp.png"
    row = _upload(
        page,
        SPOOFED,
        shown="report<U+202E>gnp.pdf",
        sentence="The lighthouse keeper rings the bell at dawn.",
    )

    # Then the panel shows the control as an escape, beside the title the name gave it
    expect(row.locator(".doc-name")).to_have_text("report<U+202E>gnp.pdf")
    expect(row.locator(".doc-title")).to_have_text("report<U+202E>gnp")
    expect(page.get_by_role("button", name="Delete report<U+202E>gnp")).to_be_visible()
    # And so does every place an answer names it: steps, chips, the quote, the viewer, Copy
    answer = _ask(page, "When does the lighthouse keeper ring the bell?")
    answer.locator(".chip", has_text="report<U+202E>gnp").first.click()
    expect(answer.locator(".quote figcaption")).to_contain_text("report<U+202E>gnp.pdf")
    expect(page.locator("#viewer-title")).to_have_text("report<U+202E>gnp")
    expect(page.locator("#viewer")).to_have_attribute("data-state", "ready", timeout=20_000)
    shown = page.evaluate("document.body.innerText")
    assert "report<U+202E>gnp" in shown
    # Nowhere on the page, attributes (a tooltip, a screen reader's label) included
    assert not BIDI.search(page.evaluate("document.body.outerHTML"))
    page.keyboard.press("Escape")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    row.get_by_role("button", name=re.compile("^Delete")).click()
    assert dialogs and "report<U+202E>gnp" in dialogs[0] and not BIDI.search(dialogs[0])

    # And the file itself keeps its real name, for a download
    doc_id = row.get_attribute("data-doc-id")
    served = page.request.get(f"{server.url}documents/{doc_id}/file")
    assert served.ok
    disposition = served.headers["content-disposition"]
    assert f"filename*=utf-8''{quote(SPOOFED)}" in disposition, disposition
    listed = page.request.get(f"{server.url}documents/{doc_id}").json()
    assert listed["file_name"] == SPOOFED
    page.context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_long_file_name_keeps_every_button_on_screen(
    browser: Any, server: LocalServer, viewport: dict[str, int], tmp_path: Path
) -> None:
    page = _page(browser, server, viewport)
    phone = viewport == PHONE
    folder = tmp_path
    kind = "phone" if phone else "desktop"
    if phone:
        page.locator("#docs-toggle").click()
    # Given a document whose name (and so title) is one long word
    row = _upload(
        page, LONG, shown=LONG, sentence="The night ferry leaves the south pier at eleven."
    )
    expect(row.get_by_role("button", name=re.compile("^Delete"))).to_be_in_viewport(ratio=1)
    if phone:
        # The drawer has slid in. (Not wait_for_function with a string: once its first check
        # fails it evaluates the string again with eval, which the page's CSP refuses.)
        slid_in = "() => document.getElementById('docs').getBoundingClientRect().left >= 0"
        for _ in range(100):
            if page.evaluate(slid_in):
                break
            page.wait_for_timeout(50)
        assert page.evaluate(slid_in)
        assert page.evaluate(OFF_SCREEN) == []
        page.screenshot(path=str(folder / f"long-name-docs-{kind}.png"))
        page.keyboard.press("Escape")

    # Then the suggested questions that quote it fit the screen
    expect(page.locator(".suggestion", has_text=LONG[:20]).first).to_be_visible()
    assert page.evaluate(OFF_SCREEN) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    page.screenshot(path=str(folder / f"long-name-welcome-{kind}.png"))

    # And so do the answer's chips, the quote and its close button, and the viewer's buttons
    answer = _ask(page, "When does the night ferry leave the south pier?")
    answer.locator(".chip", has_text=LONG[:20]).first.click()
    expect(page.locator("#viewer")).to_have_attribute("data-state", "ready", timeout=20_000)
    for name in ("Previous page", "Next page", "Close the document"):
        expect(page.get_by_role("button", name=name)).to_be_in_viewport(ratio=1)
    page.screenshot(path=str(folder / f"long-name-viewer-{kind}.png"))
    page.keyboard.press("Escape")
    expect(answer.locator(".quote")).to_be_visible()
    assert page.evaluate(OFF_SCREEN) == []
    page.screenshot(path=str(folder / f"long-name-answer-{kind}.png"))
    page.context.close()


def test_a_name_with_a_zero_width_character_is_shown_escaped(
    browser: Any, server: LocalServer
) -> None:
    page = _page(browser, server, DESKTOP)
    # Given a PDF uploaded under a name that looks like "invoice.pdf" and holds a zero width space
    row = _upload(
        page,
        "invo\u200bice.pdf",
        shown="invo<U+200B>ice.pdf",
        sentence="The invoice is due at the end of the month.",
    )

    # Then the panel shows the invisible character as an escape
    expect(row.locator(".doc-name")).to_have_text("invo<U+200B>ice.pdf")
    expect(row.locator(".doc-title")).to_have_text("invo<U+200B>ice")
