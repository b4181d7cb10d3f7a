"""Other sites against `docchat serve`, in headless Chromium (Debian's), driven by Playwright.

A page on another origin tries to plant a PDF with a `no-cors` fetch (the attack of issue 12,
item 2); a DNS-rebinding name points at the server; and the server's own page, given a token,
still works.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.api.guarded import PDF, GuardedServer
from tests.web.browser import expect, launched_chromium

TOKEN = "page-token-5d1c"
# What the attacking page runs: the request a no-cors fetch may send anywhere, body as a Blob
# with no type (so no Content-Type header) and as text/plain.
ATTACK = """<!doctype html><title>cat pictures</title><script>
const pdf = Uint8Array.from(atob("{pdf}"), (c) => c.charCodeAt(0));
const target = "{target}/documents?filename=";
Promise.allSettled([
  fetch(target + "planted.pdf", {{method: "POST", mode: "no-cors", body: new Blob([pdf])}}),
  fetch(target + "planted2.pdf", {{method: "POST", mode: "no-cors", body: new Blob([pdf]),
                                   headers: {{"Content-Type": "text/plain"}}}}),
  fetch("{target}/documents/anything", {{method: "DELETE", mode: "no-cors"}}),
]).then(() => {{ document.title = "sent"; }});
</script>"""


class AttackSite:
    """A static page on another origin (`host`, a free port), served by the standard library."""

    def __init__(self, host: str, page: str) -> None:
        body = page.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> AttackSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # DNS rebinding without DNS: the attacker's name resolves to the server's address.
    yield from launched_chromium("--host-resolver-rules=MAP rebind.test 127.0.0.1")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GuardedServer]:
    with GuardedServer(tmp_path / "data") as running:
        yield running


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1"], ids=["cross-site", "other-port"])
def test_a_page_on_another_origin_cannot_plant_or_delete_documents(
    browser: Any, server: GuardedServer, host: str
) -> None:
    # Given a document the user added, and a page on another origin that attacks
    own = server.wait(_post_own(server))
    page_text = ATTACK.format(pdf=base64.b64encode(PDF).decode(), target=server.url)
    with AttackSite(host, page_text) as site:
        context = browser.new_context()
        page = context.new_page()

        # When the user visits it
        page.goto(site.url)
        expect(page).to_have_title("sent", timeout=15_000)
        context.close()

    # Then nothing was added and nothing deleted
    assert [p.name for p in server.stored()] == ["mine.pdf"]
    assert [d.doc_id for d in server.index.documents()] == [own.doc_id]


def test_a_rebound_name_gets_nothing_from_the_server(browser: Any, server: GuardedServer) -> None:
    context = browser.new_context()
    page = context.new_page()

    for path in ("/", "/documents"):
        response = page.goto(f"http://rebind.test:{server.port}{path}")
        assert response is not None and response.status == 403
        expect(page.locator("body")).to_contain_text("does not answer to the host name")
    context.close()


def test_the_page_asks_once_for_the_token_then_works(browser: Any, tmp_path: Path) -> None:
    with GuardedServer(tmp_path / "data", token=TOKEN) as server:
        context = browser.new_context()
        page = context.new_page()
        prompts: list[str] = []

        def answer(dialog: Any) -> None:
            prompts.append(dialog.message)
            dialog.accept(TOKEN)

        page.on("dialog", answer)
        page.goto(server.url)

        # The documents load and an upload goes through, with the token the page asked for
        expect(page.locator("#docs-empty")).to_be_visible()
        expect(page.locator("#docs-error")).to_be_hidden()
        page.set_input_files(
            "#file", files=[{"name": "ferry.pdf", "mimeType": "application/pdf", "buffer": PDF}]
        )
        row = page.locator("#doc-list li.doc", has_text="ferry.pdf")
        expect(row).to_have_attribute("data-status", "INDEXED", timeout=30_000)
        page.reload()
        expect(page.locator("#doc-list li.doc", has_text="ferry.pdf")).to_have_count(1)
        context.close()

    assert len(prompts) == 1 and "API token" in prompts[0]
    assert [p.name for p in server.stored()] == ["ferry.pdf"]


def _post_own(server: GuardedServer) -> str:
    import httpx

    response = httpx.post(
        f"{server.url}/documents",
        params={"filename": "mine.pdf"},
        content=PDF,
        headers={"content-type": "application/pdf"},
    )
    assert response.status_code == 202, response.text
    return str(response.json()["doc_id"])


def test_a_mistyped_token_is_asked_for_again_and_the_page_works(
    browser: Any, tmp_path: Path
) -> None:
    with GuardedServer(tmp_path / "data", token=TOKEN) as server:
        context = browser.new_context()
        page = context.new_page()
        answers = iter(["not-the-token", TOKEN])
        prompts: list[str] = []

        def answer(dialog: Any) -> None:
            prompts.append(dialog.message)
            dialog.accept(next(answers, TOKEN))

        page.on("dialog", answer)
        page.goto(server.url)

        # The page's settings load with the right token: uploads are offered, no reload needed
        expect(page.locator("#docs-empty")).to_be_visible()
        expect(page.get_by_role("button", name="Upload documents")).to_be_visible()
        expect(page.locator("#docs-error")).to_be_hidden()
        context.close()

    assert len(prompts) == 2
