"""Feedback under a saved answer, in headless Chromium (Debian's): rate by keyboard, change the
rating, comment, reload and find it all again, clear it; the server keeps what the page shows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from docchat.answer.conversations import LOCAL_USER
from tests.pdfgen import make_pdf
from tests.web.browser import expect
from tests.web.serving import LocalServer

INDEXING_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 20_000
QUESTION = "When does the ferry leave the north pier?"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LocalServer]:
    with LocalServer(tmp_path / "data") as running:
        yield running


def _answered(browser: Any, server: LocalServer) -> Any:
    """A page with one cited answer, saved in a new conversation."""
    page = browser.new_context().new_page()
    page.goto(server.url)
    pdf = make_pdf([[("h1", "Ferries"), ("body", "The ferry leaves the north pier every hour.")]])
    page.set_input_files(
        "#file", files=[{"name": "ferries.pdf", "mimeType": "application/pdf", "buffer": pdf}]
    )
    row = page.locator("#doc-list li.doc:not([data-status=UPLOADING])", has_text="ferries")
    expect(row).to_have_attribute("data-status", "INDEXED", timeout=INDEXING_TIMEOUT_MS)
    page.locator("#question").fill(QUESTION)
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    expect(answer.locator(".chip")).to_have_count(1)
    return page


def _rating(page: Any, name: str) -> Any:
    group = page.get_by_role("group", name="Rate this answer")
    return group.get_by_role("button", name=name, exact=True)


def _saved(server: LocalServer) -> list[tuple[str, str, dict[str, str]]]:
    [convo] = server.conversations.conversations(LOCAL_USER)
    rated = server.conversations.ratings(LOCAL_USER, convo.id) or []
    return [(r.feedback.rating, r.feedback.comment, r.feedback.versions) for r in rated]


def test_an_answer_is_rated_changed_commented_and_kept_after_a_reload(
    browser: Any, server: LocalServer
) -> None:
    page = _answered(browser, server)
    helpful, unhelpful = _rating(page, "Helpful"), _rating(page, "Not helpful")
    expect(helpful).to_have_attribute("aria-pressed", "false")
    expect(unhelpful).to_have_attribute("aria-pressed", "false")
    expect(page.get_by_role("button", name="Comment", exact=True)).to_be_hidden()

    # When the reader rates it helpful from the keyboard
    helpful.focus()
    page.keyboard.press("Enter")

    # Then the button is pressed, a screen reader hears so, and the server keeps the rating
    expect(helpful).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#announce")).to_have_text("Rated helpful.")
    [(rating, comment, versions)] = _saved(server)
    assert (rating, comment) == ("up", "")
    [record] = server.backend.library.documents()
    assert versions == {record.doc_id: record.version}

    # When they change their mind (Tab to the next button, Space presses it)
    page.keyboard.press("Tab")
    expect(unhelpful).to_be_focused()
    page.keyboard.press("Space")
    expect(unhelpful).to_have_attribute("aria-pressed", "true")
    expect(helpful).to_have_attribute("aria-pressed", "false")

    # and add a comment
    page.keyboard.press("Tab")
    comment = page.get_by_role("button", name="Comment", exact=True)
    expect(comment).to_be_focused()
    expect(comment).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("Enter")
    expect(comment).to_have_attribute("aria-expanded", "true")
    box = page.get_by_label("Your comment on this answer")
    expect(box).to_be_focused()
    page.keyboard.type("It gives the pier but not the first sailing.")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # Save comment
    expect(page.locator("#announce")).to_have_text("Comment saved.")
    expect(box).to_be_hidden()
    expect(page.get_by_role("button", name="Edit comment", exact=True)).to_be_focused()
    assert [s[:2] for s in _saved(server)] == [
        ("down", "It gives the pier but not the first sailing.")
    ]

    # Then after a reload the answer shows the rating and the comment again
    page.reload()
    expect(page.locator(".msg.assistant")).to_have_count(1)
    expect(_rating(page, "Not helpful")).to_have_attribute("aria-pressed", "true")
    expect(_rating(page, "Helpful")).to_have_attribute("aria-pressed", "false")
    page.get_by_role("button", name="Edit comment", exact=True).click()
    expect(page.get_by_label("Your comment on this answer")).to_have_value(
        "It gives the pier but not the first sailing."
    )
    page.keyboard.press("Escape")
    expect(page.get_by_label("Your comment on this answer")).to_be_hidden()

    # When the pressed rating is pressed again, the rating is cleared, and stays so
    _rating(page, "Not helpful").click()
    expect(_rating(page, "Not helpful")).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#announce")).to_have_text("Rating cleared.")
    assert _saved(server) == []
    page.reload()
    expect(page.locator(".msg.assistant")).to_have_count(1)
    expect(_rating(page, "Helpful")).to_have_attribute("aria-pressed", "false")
    expect(_rating(page, "Not helpful")).to_have_attribute("aria-pressed", "false")
    expect(page.get_by_role("button", name="Comment", exact=True)).to_be_hidden()
    page.context.close()


def test_a_rating_the_server_refuses_is_said_and_not_shown_as_pressed(
    browser: Any, server: LocalServer
) -> None:
    # Given an answer whose conversation was deleted elsewhere (another tab, the API)
    page = _answered(browser, server)
    [convo] = server.conversations.conversations(LOCAL_USER)
    assert httpx.delete(f"{server.url}conversations/{convo.id}", timeout=10).status_code == 200

    # When the reader rates it
    _rating(page, "Helpful").click()

    # Then the page says why it was not kept, and shows no rating
    expect(page.get_by_role("alert")).to_contain_text("The rating was not saved: no conversation")
    expect(_rating(page, "Helpful")).to_have_attribute("aria-pressed", "false")
    page.context.close()
