"""The page as native ES modules in headless Chromium (Debian's): one module script, nothing
shared through `window`, and the chat limits read from GET /config (today's values when a
server does not send them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import expect
from tests.web.serving import LocalServer

WEB = Path(__file__).resolve().parents[2] / "layers/docchat/docchat/web"
# What the page keeps to when /config has no `limits` (the API's own, total less a margin).
TODAY = {
    "max_messages": 50,
    "max_message_chars": 20000,
    "max_total_chars": 90000,
    "max_doc_ids": 100,
    "max_title_chars": 120,
    "max_feedback_chars": 2000,
}
RECENT = """
async ([messages, limits]) => {
  const { recentMessages } = await import(new URL("static/chat.js", location.href).href);
  return recentMessages(messages.map(([role, content]) => ({ role, content })), limits)
    .map((m) => [m.role, m.content]);
}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    with LocalServer(tmp_path_factory.mktemp("modules-data")) as running:
        yield running


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    opened = browser.new_context()
    yield opened
    opened.close()


def _with_limits(context: Any, limits: dict[str, int]) -> None:
    """/config as the server answers it, with `limits` added."""

    def add(route: Any) -> None:
        answer = route.fetch()
        route.fulfill(response=answer, json={**answer.json(), "limits": limits})

    context.route("**/config", add)


def test_the_page_is_one_module_script() -> None:
    page = (WEB / "index.html").read_text()
    scripts = [line.strip() for line in page.splitlines() if "<script" in line and "src=" in line]

    assert scripts == ['<script type="module" src="static/app.js"></script>']


def test_the_page_puts_nothing_on_window(context: Any, server: LocalServer) -> None:
    # Given what a document with no script has on `window` at the same origin (a secure one)
    page = context.new_page()
    page.goto(f"{server.url}config")
    names = "() => Object.getOwnPropertyNames(window)"
    blank = set(page.evaluate(names))

    # When the page has loaded and read the documents
    page.goto(server.url)
    expect(page.locator("#docs-empty")).to_be_visible()

    # Then its modules shared nothing through globals
    assert set(page.evaluate(names)) - blank == set()


def test_without_limits_in_config_the_page_keeps_to_todays(
    context: Any, server: LocalServer
) -> None:
    # Given a server from before /config sent limits (this one sends them: they are taken out)
    served: list[dict[str, Any]] = []

    def without_limits(route: Any) -> None:
        answer = {k: v for k, v in route.fetch().json().items() if k != "limits"}
        served.append(answer)
        route.fulfill(json=answer)

    context.route("**/config", without_limits)
    page = context.new_page()
    page.goto(server.url)
    expect(page.locator("#docs-empty")).to_be_visible()

    read = page.evaluate(
        """async () => (await import(new URL("static/config.js", location.href).href))
        .config.limits"""
    )

    assert served and all("limits" not in answer for answer in served)
    assert read == TODAY
    expect(page.locator("#question")).to_have_attribute("maxlength", "20000")


def test_the_page_keeps_to_the_limits_config_sends(context: Any, server: LocalServer) -> None:
    # Given a server that takes questions of at most 12 characters and titles of 9
    _with_limits(context, {**TODAY, "max_message_chars": 12, "max_title_chars": 9})
    bodies: list[dict[str, Any]] = []
    context.on(
        "request",
        lambda r: bodies.append(json.loads(r.post_data or "{}")) if r.url.endswith("/chat") else 0,
    )
    page = context.new_page()
    page.goto(server.url)

    # Then the question box takes no more, and a longer question is sent cut to the limit
    expect(page.locator("#question")).to_have_attribute("maxlength", "12")
    page.locator("#question").fill("When does the ferry leave?")
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=20_000)
    assert bodies[0]["messages"] == [{"role": "user", "content": "When does th"}]
    # And a conversation's new title is as long as the server takes
    row = page.locator("#convo-list li").first
    row.get_by_role("button", name="Rename").click()
    expect(row.locator("input")).to_have_attribute("maxlength", "9")


@pytest.mark.parametrize(
    ("limits", "kept"),
    [
        # The newest two messages; a conversation sent never starts with an answer
        (
            {"max_messages": 2, "max_message_chars": 100, "max_total_chars": 100},
            [["user", "klm"]],
        ),
        # Each message cut to 4 characters
        (
            {"max_messages": 3, "max_message_chars": 4, "max_total_chars": 100},
            [["user", "abcd"], ["assistant", "fghi"], ["user", "klm"]],
        ),
        # The newest that fit 10 characters in all
        (
            {"max_messages": 3, "max_message_chars": 100, "max_total_chars": 10},
            [["user", "klm"]],
        ),
    ],
)
def test_recent_messages_fit_the_limits_given(
    context: Any, server: LocalServer, limits: dict[str, int], kept: list[list[str]]
) -> None:
    page = context.new_page()
    page.goto(server.url)
    messages = [["user", "abcde"], ["assistant", "fghij"], ["user", "klm"]]

    assert page.evaluate(RECENT, [messages, limits]) == kept
