"""The page's Content-Security-Policy in headless Chromium (Debian's): the page, the pdf.js viewer
and the Cognito sign-in work under it without a single violation, and a page on another origin
cannot frame it (the policy itself is checked in tests/api/test_page_policy.py)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import expect
from tests.web.fake_cognito import FakeCognito, served
from tests.web.serving import LocalServer
from tests.web.test_sign_in import PASSWORD, USER, _served
from tests.web.test_viewer import DMCA, QUESTION, _ask, _indexed

# Every violation the page reports, kept where the test can read it (installed before the
# page's own scripts run).
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__violations.push(`${e.effectiveDirective} ${e.blockedURI} ${e.sourceFile}`));
"""


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    context.add_init_script(WATCH)
    yield context
    context.close()


def _violations(page: Any) -> list[str]:
    return list(page.evaluate("window.__violations"))


def test_the_page_and_the_viewer_work_under_the_policy(context: Any, tmp_path: Path) -> None:
    with LocalServer(tmp_path / "data") as server:
        _indexed(server, DMCA)
        page = context.new_page()
        response = page.goto(server.url)
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]

        # When a question is answered and its citation opened in pdf.js
        answer = _ask(page, QUESTION)
        answer.locator(".chip").first.click()
        viewer = page.locator("#viewer")
        expect(viewer).to_have_attribute("data-state", "ready", timeout=20_000)
        expect(viewer).to_have_attribute("data-highlight", "full")

        # Then the page rendered it with the policy in force, and nothing was refused
        assert page.locator(".viewer-canvas").evaluate("c => c.width * c.height") > 0
        assert _violations(page) == []


def test_the_cognito_sign_in_works_under_the_policy(context: Any, tmp_path: Path) -> None:
    with served(FakeCognito()) as cognito:
        for stack in _served(tmp_path, cognito.sign_in(), cognito):
            page = context.new_page()
            response = page.goto(stack.page_url)
            policy = response.headers["content-security-policy"]
            assert f"connect-src 'self' {cognito.url}" in policy

            # When the user signs in on the managed login and the page exchanges the code
            page.get_by_role("button", name="Sign in").click()
            page.get_by_label("Email address").fill(USER)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()

            # Then the token endpoint was reached from the page, and nothing was refused
            expect(page.locator("#account-name")).to_have_text(USER)
            assert cognito.grants == ["authorization_code"]
            expect(page.locator("#docs-empty")).to_be_visible()
            assert _violations(page) == []


class Framer(http.server.BaseHTTPRequestHandler):
    """Another site: a page that frames the docchat page, and its /ready as a control."""

    target = ""

    def do_GET(self) -> None:
        body = (
            f'<iframe id="page" src="{self.target}"></iframe>'
            f'<iframe id="control" src="{self.target}ready"></iframe>'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_another_origin_cannot_frame_the_page(context: Any, tmp_path: Path) -> None:
    with LocalServer(tmp_path / "data") as server:
        Framer.target = server.url
        other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Framer)
        threading.Thread(target=other.serve_forever, daemon=True).start()
        try:
            page = context.new_page()
            page.goto(f"http://localhost:{other.server_address[1]}/")  # another origin
            page.wait_for_load_state("load")

            frames = {f.name or f.url: f for f in page.frames}
            control = page.frame_locator("#control")
            framed = page.frame_locator("#page")
            # The control (a JSON route, no policy) loads in its frame: framing itself works
            expect(control.locator("body")).to_contain_text('"status":"ready"')
            # The page does not: Chromium shows its error page instead of the page
            expect(framed.locator("#question")).to_have_count(0)
            docchat = [f for f in frames.values() if f.url == server.url]
            assert all(f.evaluate("document.querySelector('#question')") is None for f in docchat)
        finally:
            other.shutdown()
            other.server_close()
