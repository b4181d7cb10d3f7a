"""The document viewer and the answer's controls in headless Chromium (Debian's), over a real
uvicorn: a citation opens the bundled pdf.js at the cited page with the quote highlighted in the
text layer, with every request to anything but loopback blocked; Stop ends the stream and the
server stops reading the model; Copy and Retry.

The viewer screenshots of docs/local.md come from here:
`DOCCHAT_SCREENSHOTS=docs/screenshots make test` writes them there (otherwise they go to a
temporary folder).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from docchat.answer.backend import ChatBackend
from docchat.models import DocStatus
from docchat.serve.access import ADMIN
from docchat.serve.mcp_tools import page_link
from tests.api.test_stop import PAUSE_S, EndlessModel
from tests.chatkit import tuned_config
from tests.conftest import EXAMPLES, REPO, page_texts, squash
from tests.pdfgen import make_pdf
from tests.web.browser import expect
from tests.web.serving import LocalServer

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
DMCA = EXAMPLES / "dmca.pdf"
QUESTION = "What does the DMCA say about circumvention of technological measures?"
VENDOR = Path(__file__).resolve().parents[2] / "layers/docchat/docchat/web/vendor/pdfjs"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}

if not (VENDOR / "pdf.min.mjs").is_file():
    pytest.fail(
        f"pdf.js is not bundled at {VENDOR}: run `make install` (or `make -C layers/docchat "
        "vendor`), which fetches pdfjs-dist from the npm registry",
        pytrace=False,
    )


def _indexed(server: LocalServer, pdf: Path) -> str:
    """Upload `pdf` the way the page does and wait until it is indexed; its doc_id."""
    record = server.uploads.receive(pdf.name, pdf.read_bytes(), collection="default", writer=ADMIN)
    deadline = time.monotonic() + 60
    while (current := server.index.document(record.doc_id)) is None or current.status not in (
        DocStatus.INDEXED,
        DocStatus.FAILED,
    ):
        assert time.monotonic() < deadline, f"{pdf.name} is still {current}"
        time.sleep(0.1)
    assert current.status == DocStatus.INDEXED, current.error
    return record.doc_id


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    with LocalServer(tmp_path_factory.mktemp("viewer-data")) as running:
        _indexed(running, DMCA)
        yield running


class Offline:
    """Every request of a browser context to anything but loopback is aborted, and noted."""

    def __init__(self, context: Any) -> None:
        self.blocked: list[str] = []
        self.seen: list[str] = []
        context.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.seen.append(url)
        if urlsplit(url).scheme in ("http", "https", "ws", "wss") and (
            urlsplit(url).hostname not in LOOPBACK
        ):
            self.blocked.append(url)
            route.abort("internetdisconnected")
        else:
            route.continue_()


@pytest.fixture
def offline_page(browser: Any, server: LocalServer) -> Iterator[tuple[Any, Offline]]:
    context = browser.new_context(viewport=DESKTOP)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url[:-1])
    offline = Offline(context)
    page = context.new_page()
    page.goto(server.url)
    yield page, offline
    context.close()


def _ask(page: Any, question: str) -> Any:
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=20_000)
    return answer


def test_citation_opens_the_pdf_at_the_quote_with_no_network(
    offline_page: tuple[Any, Offline], tmp_path: Path
) -> None:
    page, offline = offline_page
    # Given an answer with cited pages
    answer = _ask(page, QUESTION)
    chip = answer.locator(".chip").first
    cited_page = int(re.search(r"p\. (\d+)", chip.inner_text()).group(1))  # type: ignore[union-attr]

    # When its first citation is clicked
    chip.click()

    # Then the viewer opens, focus inside it, at the cited page, once pdf.js rendered it
    viewer = page.locator("#viewer")
    expect(viewer).to_be_visible()
    expect(page.locator("#viewer-title")).to_be_focused()
    expect(page.locator("#viewer-title")).to_have_text(
        "The Digital Millennium Copyright Act of 1998"
    )
    expect(viewer).to_have_attribute("data-state", "ready", timeout=20_000)
    expect(viewer).to_have_attribute("data-page", str(cited_page))
    expect(page.locator("#viewer-where")).to_have_text(re.compile(rf"^Page {cited_page} of \d+$"))
    assert page.locator(".viewer-canvas").evaluate("c => c.width * c.height") > 0
    # And the quote is highlighted in the page's text layer: the marked characters are the quote
    expect(viewer).to_have_attribute("data-highlight", "full")
    quote = page.locator(".viewer-quote").inner_text()
    marked = "".join(page.locator("#viewer .textLayer mark").all_inner_texts())
    assert squash(marked) == squash(quote), (marked, quote)
    assert squash(quote) in page_texts(DMCA)[cited_page - 1]
    expect(page.locator("#viewer-status")).to_contain_text("the quote is highlighted")
    expect(page.locator("#viewer .textLayer mark").first).to_be_in_viewport()

    # And nothing left loopback: pdf.js and its worker came from the page's own static files
    assert offline.blocked == []
    scripts = [u for u in offline.seen if "pdf" in urlsplit(u).path and u.endswith(".mjs")]
    assert {urlsplit(u).path for u in scripts} == {
        "/static/vendor/pdfjs/pdf.min.mjs",
        "/static/vendor/pdfjs/pdf.worker.min.mjs",
    }, scripts

    # When the next page is shown and then the cited one again, the highlight comes back
    page.get_by_role("button", name="Next page").click()
    expect(viewer).to_have_attribute("data-page", str(cited_page + 1))
    expect(viewer).to_have_attribute("data-state", "ready")
    expect(page.locator("#viewer .textLayer mark")).to_have_count(0)
    page.get_by_role("button", name="Previous page").click()
    expect(viewer).to_have_attribute("data-page", str(cited_page))
    expect(viewer).to_have_attribute("data-highlight", "full")

    # The rest of the page is inert while the viewer is open; Escape closes it, back to the chip
    assert page.locator("#app").get_attribute("inert") == ""
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()
    expect(chip).to_be_focused()
    assert page.locator("#app").get_attribute("inert") is None

    # Copy puts the answer with its markers, and what each marker cites, on the clipboard
    answer.get_by_role("button", name="Copy the answer").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    text = answer.locator(".answer").inner_text()
    body, _, sources = copied.partition("\n\nSources:\n")
    assert squash(body) == squash(text)  # the page shows a marker [3] as a button "3"
    assert re.search(r"\[\d+\]", body), body
    # (the first chip is the first quote's source, whichever retrieved passage that is)
    number = chip.get_attribute("data-number")
    # (with the pages of every quote taken from that passage, the cited one among them)
    place = re.match(
        rf"\[{number}\] The Digital Millennium Copyright Act of 1998, pages? ([\d, ]+): “", sources
    )
    assert place and str(cited_page) in place.group(1).split(", "), sources

    _screenshots(page, chip, tmp_path)


def test_a_link_to_a_page_opens_it_in_the_viewer_with_its_quote(
    browser: Any, server: LocalServer
) -> None:
    # Given the link an MCP result gives to a quote on page 3
    [record] = server.index.documents()
    quote = "Section 102(d) of the DMCA amends section 411(a) by broadening the exemption"
    link = page_link(server.url, record.doc_id, 3, quote_text=quote)
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()

    # When it is opened
    page.goto(link)

    # Then the viewer shows that page of the document, the quote highlighted
    viewer = page.locator("#viewer")
    expect(viewer).to_have_attribute("data-state", "ready", timeout=20_000)
    expect(viewer).to_have_attribute("data-page", "3")
    expect(page.locator("#viewer-title")).to_have_text(
        "The Digital Millennium Copyright Act of 1998"
    )
    expect(viewer).to_have_attribute("data-highlight", "full")
    marked = "".join(page.locator("#viewer .textLayer mark").all_inner_texts())
    assert squash(marked) == squash(quote)

    # And a link without a quote (a passage, a document) opens its page with nothing to find
    page.keyboard.press("Escape")
    page.goto(page_link(server.url, record.doc_id, 5))
    expect(viewer).to_have_attribute("data-page", "5", timeout=20_000)
    expect(viewer).to_have_attribute("data-state", "ready")
    expect(page.locator("#viewer-status")).to_have_text(re.compile(r"^Page 5 of \d+\.$"))
    expect(page.locator("#viewer .textLayer mark")).to_have_count(0)
    context.close()


def _screenshots(page: Any, chip: Any, tmp_path: Path) -> None:
    """The viewer open, on a desktop and on a phone, for docs/local.md."""
    folder = REPO / os.environ.get("DOCCHAT_SCREENSHOTS", tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    viewer = page.locator("#viewer")
    chip.click()
    expect(viewer).to_have_attribute("data-highlight", "full", timeout=20_000)
    page.screenshot(path=str(folder / "viewer-desktop.png"))
    page.keyboard.press("Escape")
    page.set_viewport_size(PHONE)
    chip.scroll_into_view_if_needed()
    chip.click()
    expect(viewer).to_have_attribute("data-highlight", "full", timeout=20_000)
    box = viewer.bounding_box()
    assert box is not None and box["width"] == PHONE["width"], box
    # The page fits the phone: no control or part of the page left off its edge
    expect(page.get_by_role("button", name="Close the document")).to_be_in_viewport(ratio=1)
    assert (
        page.locator(".viewer-canvas").evaluate("c => c.getBoundingClientRect().right")
        <= (PHONE["width"])
    )
    page.locator("#viewer .textLayer mark").first.scroll_into_view_if_needed()
    page.screenshot(path=str(folder / "viewer-phone.png"))
    page.keyboard.press("Escape")
    expect(chip).to_be_focused()


def test_viewer_says_when_the_document_cannot_be_opened(
    offline_page: tuple[Any, Offline], server: LocalServer
) -> None:
    page, _ = offline_page
    answer = _ask(page, QUESTION)
    page.route(
        "**/documents/*/file",
        lambda route: route.fulfill(
            status=404,
            content_type="application/json",
            body=json.dumps({"error": {"status": 404, "message": "the PDF is gone"}}),
        ),
    )
    answer.locator(".chip").first.click()
    viewer = page.locator("#viewer")
    expect(viewer).to_have_attribute("data-state", "failed")
    expect(page.locator("#viewer-status")).to_contain_text("the PDF is gone")
    page.get_by_role("button", name="Close the document").click()
    expect(viewer).to_be_hidden()


def test_viewer_tells_a_reader_that_a_cited_document_was_deleted(
    offline_page: tuple[Any, Offline], server: LocalServer, tmp_path: Path
) -> None:
    page, _ = offline_page
    # Given an answer citing a document, which is then deleted
    pdf = tmp_path / "ferry-notice.pdf"
    pdf.write_bytes(make_pdf([[("body", "The harbour ferry is cancelled on stormy days.")]]))
    doc_id = _indexed(server, pdf)
    answer = _ask(page, "When is the harbour ferry cancelled?")
    chip = answer.locator(".chip", has_text="ferry-notice").first
    assert page.request.delete(f"{server.url}documents/{doc_id}").ok

    # When its citation is clicked
    chip.click()

    # Then the viewer says what happened in a reader's words: no id, route or status code
    viewer = page.locator("#viewer")
    expect(viewer).to_have_attribute("data-state", "failed")
    status = page.locator("#viewer-status")
    expect(status).to_have_text(
        "This document is no longer in your library: it was deleted after this answer was "
        "written. The passage the answer quoted is below."
    )
    expect(page.locator(".viewer-quote")).to_contain_text("cancelled on stormy days")
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()


# --- Stop, Retry ------------------------------------------------------------------------------


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[tuple[LocalServer, EndlessModel]]:
    with LocalServer(tmp_path / "data") as running:
        model = EndlessModel()
        # Before the first request: the app builds its backend on first use.
        running.backend = ChatBackend(
            library=running.backend.library, model=model, config=tuned_config()
        )
        yield running, model


def test_stop_ends_the_stream_and_the_server_stops_generating(
    browser: Any, model_server: tuple[LocalServer, EndlessModel]
) -> None:
    server, model = model_server
    context = browser.new_context(viewport=DESKTOP)
    bodies: list[dict[str, Any]] = []
    context.on(
        "request",
        lambda r: bodies.append(json.loads(r.post_data or "{}")) if r.url.endswith("/chat") else 0,
    )
    page = context.new_page()
    page.goto(server.url)
    # Given an answer streaming from the model
    page.locator("#question").fill("Tell me everything")
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".answer")).to_contain_text("word3")

    # When Stop is pressed
    stop = page.get_by_role("button", name="Stop the answer")
    stop.click()

    # Then the stream ends on the page, and the server closes the model's stream and reads no more
    expect(answer).to_have_attribute("aria-busy", "false")
    expect(answer.locator(".msg-footer")).to_contain_text("Stopped.")
    expect(page.get_by_role("button", name="Send the question")).to_be_visible()
    assert model.closed.wait(timeout=3), f"the model stream is still open ({model.read} read)"
    read = model.read
    time.sleep(10 * PAUSE_S)
    assert model.read == read < 100
    assert not model.finished

    # When Retry is pressed, the same question is asked again, in place of the stopped answer
    model.closed.clear()
    answer.get_by_role("button", name="Ask the same question again").click()
    expect(page.locator(".msg.assistant")).to_have_count(1)
    expect(page.locator(".msg.assistant .answer")).to_contain_text("word2")
    assert len(bodies) == 2
    assert (
        bodies[1]["messages"]
        == bodies[0]["messages"]
        == [{"role": "user", "content": "Tell me everything"}]
    )
    page.get_by_role("button", name="Stop the answer").click()
    assert model.closed.wait(timeout=3)
    context.close()


def test_a_stopped_answer_is_saved_as_far_as_it_came(
    browser: Any, model_server: tuple[LocalServer, EndlessModel]
) -> None:
    server, model = model_server
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.goto(server.url)
    # Given an answer stopped while it streamed
    page.locator("#question").fill("Tell me everything")
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".answer")).to_contain_text("word3")
    page.get_by_role("button", name="Stop the answer").click()
    expect(answer.locator(".msg-footer")).to_contain_text("Stopped.")
    assert model.closed.wait(timeout=3)

    # When the page is reloaded
    page.reload()

    # Then the saved conversation shows the question and the answer as far as it came, stopped
    expect(page.locator(".msg.user .text")).to_have_text(["Tell me everything"])
    restored = page.locator(".msg.assistant")
    expect(restored).to_have_count(1)
    expect(restored.locator(".answer")).to_contain_text("word3")
    expect(restored.locator(".msg-footer")).to_contain_text("Stopped.")

    # And Retry asks that question again in its place, also in the saved conversation
    model.closed.clear()
    restored.get_by_role("button", name="Ask the same question again").click()
    expect(page.locator(".msg.assistant .answer")).to_contain_text("word2")
    page.get_by_role("button", name="Stop the answer").click()
    assert model.closed.wait(timeout=3)
    saved = server.conversations.conversations("local")
    assert len(saved) == 1
    kept = server.conversations.conversation("local", saved[0].id)
    assert kept is not None
    assert [(m.role, m.stopped) for m in kept.messages] == [("user", False), ("assistant", True)]
    context.close()


def test_page_loads_pdfjs_only_from_its_static_files() -> None:
    # The bundle is what `make vendor` put there: the licence with it, no CDN URL in the page.
    assert "Apache License" in (VENDOR / "LICENSE").read_text()
    assert (VENDOR / "VERSION").read_text().startswith("pdfjs-dist 6.5.438 sha512-")
    web = VENDOR.parents[1]
    for path in (web / "index.html", *web.glob("*.js")):
        text = path.read_text()
        assert not re.search(r"https?://(?!127\.0\.0\.1)[\w.-]+/.*pdf", text), path.name
