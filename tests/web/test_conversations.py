"""Saved conversations in the page, in headless Chromium (Debian's).

Locally: a real `docchat serve` over a data directory; the open conversation comes back after a
reload and after the server is stopped and started again over the same directory. In the cloud
shape: two users signed in through the Cognito stand-in, the gate forwarding the request
context as the Lambda Web Adapter does, each seeing only their own conversations.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from docchat.serve.access import NO_MAPPING, cognito_access_for
from docchat.serve.identity import cognito_user
from tests.pdfgen import make_pdf
from tests.web.browser import expect
from tests.web.fake_cognito import FakeCognito, StageGate, served
from tests.web.serving import LocalServer

#: Who a request is and what they may do, as the stack without a groups mapping says.
CLAIMED = cognito_access_for(lambda: NO_MAPPING, cognito_user)

DOCCHAT = Path(sys.executable).parent / "docchat"
ANSWER_TIMEOUT_MS = 30_000
QUESTION = "When does the ferry leave the north pier?"
PHONE = {"width": 390, "height": 844}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("DOCCHAT_")}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Serve:
    """`docchat serve` over one data directory, stopped and started again on the same port
    (the same origin, so the page keeps what it remembers)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        command = [str(DOCCHAT), "serve", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, "--data-dir", str(self.data_dir)],
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()  # printed once the port is bound
        assert f"on http://127.0.0.1:{self.port}" in line, line
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.url, timeout=2)
                return
            except httpx.TransportError:
                assert time.monotonic() < deadline, "docchat serve did not answer"
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)
            self.process = None


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    data_dir = tmp_path / "data"
    pdf = tmp_path / "ferries.pdf"
    pdf.write_bytes(
        make_pdf([[("h1", "Ferries"), ("body", "The ferry leaves the north pier every hour.")]])
    )
    subprocess.run(
        [str(DOCCHAT), "ingest", str(pdf), "--data-dir", str(data_dir)],
        check=True,
        capture_output=True,
        env=_env(),
        timeout=300,
    )
    served = Serve(data_dir)
    served.start()
    yield served
    served.stop()


def _ask(page: Any, question: str) -> Any:
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    return answer


def _transcript(page: Any) -> list[tuple[str, str]]:
    shown: list[tuple[str, str]] = page.evaluate(
        """() => [...document.querySelectorAll('#transcript .msg')].map((m) => [
            m.classList.contains('user') ? 'user' : 'assistant',
            (m.querySelector('.text') || m.querySelector('.answer')).textContent])"""
    )
    return [(role, text) for role, text in shown]


def test_a_conversation_survives_a_reload_and_a_server_restart(browser: Any, serve: Serve) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(serve.url)
    expect(page.locator("#convos")).to_be_visible()
    expect(page.locator("#convos-empty")).to_be_visible()

    # Given a question answered (with a cited page) in a new conversation
    answer = _ask(page, QUESTION)
    expect(answer.locator(".chip")).to_have_count(1)
    expect(page.locator("#convo-list li")).to_have_count(1)
    expect(page.locator(".convo-open")).to_have_text(QUESTION)
    expect(page.locator(".convo-open")).to_have_attribute("aria-current", "true")
    asked = _transcript(page)
    assert [role for role, _ in asked] == ["user", "assistant"]
    assert "north pier" in asked[1][1]

    # When the page is reloaded, the conversation is back: the list, the messages, the sources
    page.reload()
    expect(page.locator(".msg.assistant")).to_have_count(1)
    assert _transcript(page) == asked
    expect(page.locator(".msg.assistant .chip")).to_have_count(1)
    expect(page.locator(".convo-open")).to_have_attribute("aria-current", "true")

    # When the server stops and starts again over the same data directory
    serve.stop()
    serve.start()
    page.reload()
    expect(page.locator(".msg.assistant")).to_have_count(1)
    assert _transcript(page) == asked
    page.locator(".msg.assistant .chip").click()
    expect(page.locator(".msg.assistant .quote")).to_contain_text("north pier")
    # A restored citation opens its document like a new one (tests/web/test_viewer.py)
    expect(page.locator("#viewer")).to_be_visible()
    page.keyboard.press("Escape")

    # And a follow-up joins the same saved conversation
    _ask(page, "How often does it leave?")
    page.reload()
    expect(page.locator(".msg")).to_have_count(4)
    expect(page.locator("#convo-list li")).to_have_count(1)
    context.close()


def test_a_question_asked_while_the_page_loads_is_saved_and_kept(
    browser: Any, serve: Serve
) -> None:
    # Given a page whose saved conversations have not been read yet (the response is held)
    context = browser.new_context()
    page = context.new_page()
    held: list[Any] = []  # routes held back while `held` is not released
    released = False

    def hold(route: Any) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)

    def release() -> None:
        nonlocal released
        released = True
        while held:
            held.pop().continue_()

    page.route("**/conversations", hold)
    page.goto(serve.url)
    expect(page.locator("#question")).to_be_focused()

    # When a question is asked at once, before the list comes
    page.locator("#question").fill(QUESTION)
    page.locator("#question").press("Enter")
    page.wait_for_timeout(300)
    release()

    # Then it is answered in a saved conversation, listed on the page and by the server
    expect(page.locator(".msg.assistant").last).to_have_attribute(
        "aria-busy", "false", timeout=ANSWER_TIMEOUT_MS
    )
    expect(page.locator(".convo-open")).to_have_text(QUESTION)
    listed = httpx.get(f"{serve.url}conversations", timeout=10).json()["conversations"]
    assert [c["title"] for c in listed] == [QUESTION]

    # Given that conversation open, and the page reloaded with its messages held
    page.unroute("**/conversations")
    released = False
    page.route("**/conversations/*", hold)
    page.reload()
    expect(page.locator("#convo-list li")).to_have_count(1)

    # When a question is asked before the open conversation is back
    page.locator("#question").fill("Which pier?")
    page.locator("#question").press("Enter")
    page.wait_for_timeout(300)
    release()

    # Then the question is not lost: it is answered, in a conversation of its own
    expect(page.locator(".msg.assistant").last).to_have_attribute(
        "aria-busy", "false", timeout=ANSWER_TIMEOUT_MS
    )
    expect(page.locator(".msg.user .text")).to_have_text(["Which pier?"])
    expect(page.locator("#convo-list li")).to_have_count(2)
    listed = httpx.get(f"{serve.url}conversations", timeout=10).json()["conversations"]
    assert [c["title"] for c in listed] == ["Which pier?", QUESTION]
    context.close()


def test_a_question_asked_before_the_page_knows_how_to_sign_in_waits_for_it(
    browser: Any, serve: Serve
) -> None:
    # Given a page whose /auth-config has not come back yet (the page's scripts have all run)
    context = browser.new_context()
    page = context.new_page()
    held: list[Any] = []
    page.route("**/auth-config", lambda route: held.append(route))
    page.goto(serve.url)
    bodies: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: bodies.append(json.loads(r.post_data or "{}")) if r.url.endswith("/chat") else 0,
    )

    # When a question is asked at once
    page.locator("#question").fill("Does the ferry run at night?")
    page.locator("#question").press("Enter")
    page.wait_for_timeout(300)
    assert bodies == []  # not sent before the page knows how to call the API
    held.pop().continue_()

    # Then it is sent once the page knows, in a saved conversation
    expect(page.locator(".msg.assistant").last).to_have_attribute(
        "aria-busy", "false", timeout=ANSWER_TIMEOUT_MS
    )
    assert len(bodies) == 1 and bodies[0]["conversation_id"]
    expect(page.locator(".convo-open").first).to_have_text("Does the ferry run at night?")
    context.close()


def test_an_answer_asked_again_replaces_the_saved_one(browser: Any, serve: Serve) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(serve.url)
    # Given a saved question and answer
    answer = _ask(page, QUESTION)
    asked = _transcript(page)

    # When Retry asks it again and the page is reloaded
    answer.get_by_role("button", name="Ask the same question again").click()
    expect(page.locator(".msg.assistant").last).to_have_attribute(
        "aria-busy", "false", timeout=ANSWER_TIMEOUT_MS
    )
    assert _transcript(page) == asked
    page.reload()

    # Then the conversation holds the question once, with its newest answer
    expect(page.locator(".msg.assistant")).to_have_count(1)
    assert _transcript(page) == asked
    # and only the newest answer offers Retry, which asks that question again
    restored = page.locator(".msg.assistant").last
    restored.get_by_role("button", name="Ask the same question again").click()
    expect(page.locator(".msg.assistant").last).to_have_attribute(
        "aria-busy", "false", timeout=ANSWER_TIMEOUT_MS
    )
    assert _transcript(page) == asked
    context.close()


def test_conversations_are_started_renamed_and_deleted_with_the_keyboard(
    browser: Any, serve: Serve
) -> None:
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.goto(serve.url)
    _ask(page, QUESTION)

    # A second conversation from the New conversation button; the first stays in the list
    page.locator("#new-chat").click()
    expect(page.locator(".msg")).to_have_count(0)
    _ask(page, "Which pier?")
    expect(page.locator("#convo-list li")).to_have_count(2)
    expect(page.locator(".convo-open").first).to_have_text("Which pier?")

    # On a phone the list is in the side panel; open the first conversation from it
    page.locator("#docs-toggle").click()
    older = page.locator(".convo-open", has_text=QUESTION)
    older.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".msg.user .text")).to_have_text([QUESTION])
    expect(page.locator("body")).not_to_have_class("docs-open")

    # Rename it with the keyboard: Rename, type, Enter
    page.locator("#docs-toggle").click()
    page.get_by_role("button", name=f"Rename “{QUESTION}”").focus()
    page.keyboard.press("Enter")
    title = page.get_by_label("New title")
    expect(title).to_be_focused()
    title.fill("Ferry times")
    page.keyboard.press("Enter")
    expect(page.locator(".convo-open", has_text="Ferry times")).to_be_focused()

    # Escape leaves a rename without changing the title
    page.get_by_role("button", name="Rename “Ferry times”").click()
    page.get_by_label("New title").fill("Not kept")
    page.keyboard.press("Escape")
    expect(page.locator(".convo-open", has_text="Ferry times")).to_have_count(1)

    # Delete the open one: the page starts afresh, and the reload keeps the rest
    page.get_by_role("button", name="Delete “Ferry times”").click()
    expect(page.locator("#convo-list li")).to_have_count(1)
    expect(page.locator(".msg")).to_have_count(0)
    page.reload()
    expect(page.locator("#convo-list li")).to_have_count(1)
    expect(page.locator(".convo-open")).to_have_text("Which pier?")
    expect(page.locator(".msg")).to_have_count(0)
    listed = httpx.get(f"{serve.url}conversations", timeout=10).json()["conversations"]
    assert [c["title"] for c in listed] == ["Which pier?"]
    context.close()


# --- two users, signed in as the cloud stack signs them in ------------------------------------

USERS = {"ana@example.com": "correct horse", "bo@example.com": "battery staple"}


@pytest.fixture
def cognito() -> Iterator[FakeCognito]:
    with served(FakeCognito(users=dict(USERS))) as fake:
        yield fake


@pytest.fixture
def stage(tmp_path: Path, cognito: FakeCognito) -> Iterator[str]:
    sign_in = cognito.sign_in()
    with LocalServer(
        tmp_path,
        sign_in=lambda: sign_in,
        gate=lambda app: StageGate(app, cognito),
        access_of=CLAIMED,
    ) as server:
        cognito.page_url = f"{server.url}v1/"
        yield cognito.page_url


def _signed_in(browser: Any, stage: str, user: str) -> Any:
    page = browser.new_context().new_page()
    page.goto(stage)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_label("Email address").fill(user)
    page.get_by_label("Password").fill(USERS[user])
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#account-name")).to_have_text(user)
    expect(page.locator("#convos")).to_be_visible()
    return page


def test_two_users_see_only_their_own_conversations(browser: Any, stage: str) -> None:
    ana = _signed_in(browser, stage, "ana@example.com")
    _ask(ana, "When did the new bridge open?")
    expect(ana.locator("#convo-list li")).to_have_count(1)
    anas_id = ana.locator("#convo-list li").get_attribute("data-id")

    bo = _signed_in(browser, stage, "bo@example.com")
    expect(bo.locator("#convos-empty")).to_be_visible()
    expect(bo.locator("#convo-list li")).to_have_count(0)
    _ask(bo, "When does the ferry leave?")
    expect(bo.locator(".convo-open")).to_have_text(["When does the ferry leave?"])

    # Bo's token cannot read, rename or delete Ana's conversation: it is not found
    statuses = bo.evaluate(
        """async (id) => {
            const token = JSON.parse(sessionStorage.getItem('docchat.tokens')).id;
            const headers = {Authorization: token, 'Content-Type': 'application/json'};
            const call = (method, body) => fetch(`conversations/${id}`, {method, headers, body})
              .then((r) => r.status);
            return [await call('GET'), await call('PATCH', '{"title": "mine"}'),
                    await call('DELETE')];
        }""",
        anas_id,
    )
    assert statuses == [404, 404, 404]

    # Each reloads into their own conversation, and lists only their own
    ana.reload()
    expect(ana.locator(".convo-open")).to_have_text(["When did the new bridge open?"])
    expect(ana.locator(".msg.user .text")).to_have_text(["When did the new bridge open?"])
    bo.reload()
    expect(bo.locator(".convo-open")).to_have_text(["When does the ferry leave?"])
    expect(bo.locator(".msg.user .text")).to_have_text(["When does the ferry leave?"])
