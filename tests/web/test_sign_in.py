"""The page signed in as the cloud stack serves it, in headless Chromium (Debian's).

The app runs behind a stand-in for API Gateway (the /v1 stage; the template's open operations
without a token, every other route only with a valid Cognito ID token) and a loopback fake of
Cognito's managed-login OAuth endpoints (tests/web/fake_cognito.py cites the pages it copies).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from docchat.serve.app import SignIn
from tests.web.browser import expect
from tests.web.fake_cognito import CLIENT_ID, FakeCognito, StageGate, served
from tests.web.serving import LocalServer

USER, PASSWORD = "ana@example.com", "correct horse"
ANSWER_TIMEOUT_MS = 15_000


@dataclass
class Stack:
    cognito: FakeCognito
    gate: StageGate
    page_url: str  # what the ChatApiUrl output gives: the stage, with its slash

    def secured_calls(self) -> list[tuple[str, str, int]]:
        return [c for c in self.gate.calls if not self.gate.is_open(c[0], c[1])]

    def refused(self) -> list[tuple[str, str, int]]:
        return [c for c in self.gate.calls if c[2] == 401]


def _served(tmp_path: Path, sign_in: SignIn, cognito: FakeCognito) -> Iterator[Stack]:
    gates: list[StageGate] = []

    def gate(app: Any) -> StageGate:
        gates.append(StageGate(app, cognito))
        return gates[-1]

    with LocalServer(tmp_path, sign_in=lambda: sign_in, gate=gate) as server:
        cognito.page_url = f"{server.url}v1/"
        yield Stack(cognito, gates[0], cognito.page_url)


@pytest.fixture
def cognito() -> Iterator[FakeCognito]:
    with served(FakeCognito()) as fake:
        yield fake


@pytest.fixture
def stack(tmp_path: Path, cognito: FakeCognito) -> Iterator[Stack]:
    sign_in = cognito.sign_in()
    yield from _served(tmp_path, sign_in, cognito)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    yield context.new_page()
    context.close()


def _sign_in(page: Any, stack: Stack) -> None:
    page.goto(stack.page_url)
    expect(page.locator("#signin")).to_be_visible()
    page.get_by_role("button", name="Sign in").click()
    page.get_by_label("Email address").fill(USER)
    page.get_by_label("Password").fill(PASSWORD)
    # Signed in, the page lists the documents, then reads their sources (sources.js): the test
    # goes on once both answered, so that a token it then revokes is not refused to those calls
    # (which would ask to sign in again before the test's own call does)
    with page.expect_response(lambda r: urlsplit(r.url).path.endswith("/sources")):
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#account-name")).to_have_text(USER)
        expect(page.locator("#docs-empty")).to_be_visible()  # the first documents call is done


def _ask(page: Any, question: str) -> Any:
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    return answer


def _stored_tokens(page: Any) -> Any:
    return page.evaluate("JSON.parse(sessionStorage.getItem('docchat.tokens'))")


def test_page_signs_in_with_pkce_and_sends_the_id_token(page: Any, stack: Stack) -> None:
    # Given the stage's URL without its slash (what the ChatApiUrl output used to be)
    page.goto(stack.page_url.rstrip("/"))

    # Then the page moves to the stage's own URL, loads, and asks to sign in before any API call
    expect(page).to_have_url(stack.page_url)
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#app")).to_be_hidden()
    assert stack.secured_calls() == []

    # When the user signs in on the managed login
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_label("Password")).to_be_visible()
    assert page.url.startswith(f"{stack.cognito.url}/login?")
    request = stack.cognito.authorize_requests[-1]
    assert request["code_challenge_method"] == "S256"
    assert request["redirect_uri"] == stack.page_url
    assert request["scope"] == "openid email"
    page.get_by_label("Email address").fill(USER)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    # Then it is back on the page, the code exchanged (PKCE verified) and gone from the address
    expect(page.locator("#account-name")).to_have_text(USER)
    expect(page).to_have_url(stack.page_url)
    assert stack.cognito.grants == ["authorization_code"]
    expect(page.locator("#docs-empty")).to_be_visible()

    # And every API call carries the ID token
    _ask(page, "What do the documents say?")
    called = {path for _, path, status in stack.secured_calls() if status == 0}
    assert {"/config", "/documents", "/chat"} <= called
    assert stack.refused() == []
    assert set(stack.gate.tokens) == {_stored_tokens(page)["id"]}


def test_page_refreshes_the_token_before_it_expires(page: Any, stack: Stack) -> None:
    stack.cognito.lifetime_s = 2
    _sign_in(page, stack)
    first = _stored_tokens(page)["id"]

    time.sleep(2.2)
    _ask(page, "What do the documents say?")

    assert stack.cognito.grants == ["authorization_code", "refresh_token"]
    assert stack.refused() == []  # refreshed before sending, not after a refusal
    assert stack.gate.tokens[-1] != first
    assert stack.gate.tokens[-1] == _stored_tokens(page)["id"]


def test_page_refreshes_a_refused_token_and_retries(page: Any, stack: Stack) -> None:
    _sign_in(page, stack)
    stack.cognito.expire_id_tokens()  # expired before the page's clock says so

    answer = _ask(page, "What do the documents say?")

    # One refusal (the question, or a documents poll that came first), then the new token.
    assert len(stack.refused()) == 1
    assert stack.cognito.grants == ["authorization_code", "refresh_token"]
    expect(answer).not_to_have_class("failed")
    assert stack.gate.tokens[-1] == _stored_tokens(page)["id"]


def test_page_keeps_the_session_through_a_sign_in_service_outage(page: Any, stack: Stack) -> None:
    stack.cognito.lifetime_s = 2
    _sign_in(page, stack)
    refresh = _stored_tokens(page)["refresh"]
    time.sleep(2.2)
    stack.cognito.down = True

    failed = _ask(page, "What do the documents say?")

    # Then the question fails with the reason, but the user stays signed in
    expect(failed.locator(".error-text")).to_contain_text("the sign-in service answered HTTP 503")
    expect(page.locator("#signin")).to_be_hidden()
    assert _stored_tokens(page)["refresh"] == refresh

    # And once the service is back, a retry refreshes and answers
    stack.cognito.down = False
    failed.get_by_role("button", name="Retry").click()
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    expect(answer).not_to_have_class("failed")
    assert stack.cognito.grants[-1] == "refresh_token"


def test_page_signs_out(page: Any, stack: Stack) -> None:
    _sign_in(page, stack)
    refresh = _stored_tokens(page)["refresh"]

    page.get_by_role("button", name="Sign out").click()

    expect(page.locator("#signin")).to_be_visible()
    expect(page).to_have_url(stack.page_url)
    assert stack.cognito.logouts == 1
    assert stack.cognito.revoked == [refresh]
    assert refresh not in stack.cognito.refresh_tokens
    assert _stored_tokens(page) is None


def test_a_call_without_a_token_is_refused_and_the_page_asks_to_sign_in_again(
    page: Any, stack: Stack
) -> None:
    # The page and its sign-in settings are open; an API route without a token is not.
    assert _status(stack.page_url) == 200
    assert _status(f"{stack.page_url}static/app.js") == 200
    assert json.loads(_body(f"{stack.page_url}auth-config"))["client_id"] == CLIENT_ID
    assert _status(f"{stack.page_url}documents") == 401

    _sign_in(page, stack)
    stack.cognito.revoke_everything()  # the session ends: no token works, no refresh either
    page.locator("#question").fill("Still there?")
    page.locator("#question").press("Enter")

    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#signin-text")).to_contain_text("Sign in again")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert _stored_tokens(page) is None
    # and a key still on its way (Enter again in the question) does not press Sign in for them
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    expect(page.locator("#signin")).to_be_visible()
    assert page.url == stack.page_url


def test_page_explains_how_to_call_an_iam_api(
    page: Any, tmp_path: Path, cognito: FakeCognito
) -> None:
    for stack in _served(tmp_path, SignIn(mode="iam", region="eu-west-1"), cognito):
        page.goto(stack.page_url)

        expect(page.locator("#signin-text")).to_contain_text("IAM (SigV4)")
        code = page.locator("#signin-code")
        expect(code).to_contain_text('--aws-sigv4 "aws:amz:eu-west-1:execute-api"')
        expect(code).to_contain_text(f"{stack.page_url}documents")
        expect(page.get_by_role("button", name="Sign in")).to_be_hidden()
        expect(page.locator("#app")).to_be_hidden()
        assert stack.secured_calls() == []


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _body(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())
