"""The local server's door, served for real on 127.0.0.1: content type, other sites' writes,
foreign Host names (DNS rebinding) and the API token. The browser's side of the same attacks is
in tests/web/test_cross_site.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from docchat.serve.guards import LocalGuard, host_name, is_loopback
from docchat.wiring.cloud import cloud_app
from tests.api.guarded import PDF, GuardedServer
from tests.pdfgen import make_pdf

TOKEN = "s3cret-token-for-tests"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GuardedServer]:
    with GuardedServer(tmp_path / "data") as running:
        yield running


def _upload(
    server: GuardedServer, headers: dict[str, str], name: str = "a.pdf", content: bytes = PDF
) -> httpx.Response:
    return httpx.post(
        f"{server.url}/documents", params={"filename": name}, content=content, headers=headers
    )


@pytest.mark.parametrize(
    "headers",
    [{}, {"content-type": "text/plain"}, {"content-type": "application/x-www-form-urlencoded"}],
    ids=["none", "text-plain", "form"],
)
def test_upload_needs_a_pdf_content_type(server: GuardedServer, headers: dict[str, str]) -> None:
    # The content types a page may send to another site without a preflight, none included
    response = _upload(server, headers)

    assert response.status_code == 415
    assert "Content-Type: application/pdf" in response.json()["error"]["message"]
    assert server.stored() == [] and server.index.documents() == []


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},
        {"origin": "null"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site", "origin": "http://127.0.0.1:1"},
        {"sec-fetch-site": "same-site"},
    ],
    ids=["other-origin", "opaque-origin", "cross-site", "other-port", "same-site"],
)
def test_writes_from_other_sites_are_refused(
    server: GuardedServer, headers: dict[str, str]
) -> None:
    pdf = {"content-type": "application/pdf"}
    chat = {"messages": [{"role": "user", "content": "When does the ferry leave?"}]}

    upload = _upload(server, {**pdf, **headers})
    delete = httpx.delete(f"{server.url}/documents/anything", headers=headers)
    asked = httpx.post(f"{server.url}/chat", json=chat, headers=headers)
    completion = httpx.post(
        f"{server.url}/v1/chat/completions", json={**chat, "model": "docchat"}, headers=headers
    )

    for refused in (upload, delete, asked, completion):
        assert refused.status_code == 403, refused.text
        assert (
            "another site may not change this docchat server"
            in (refused.json()["error"]["message"])
        )
    assert server.stored() == [] and server.index.documents() == []


def test_the_servers_own_page_and_clients_without_a_browser_may_write(
    server: GuardedServer,
) -> None:
    own = {"origin": server.url, "sec-fetch-site": "same-origin"}

    # Two different PDFs: the same bytes under two names are one document by design
    from_page = _upload(server, {"content-type": "application/pdf", **own}, name="page.pdf")
    other = make_pdf([[("h1", "Timetable"), ("body", "The ferry leaves at noon.")]])
    from_curl = _upload(server, {"content-type": "application/pdf"}, "curl.pdf", other)

    assert from_page.status_code == 202 and from_curl.status_code == 202
    assert [server.wait(r.json()["doc_id"]).status for r in (from_page, from_curl)] == [
        "INDEXED",
        "INDEXED",
    ]
    assert [p.name for p in server.stored()] == ["curl.pdf", "page.pdf"]


@pytest.mark.parametrize("path", ["/", "/documents", "/config", "/static/app.js"])
def test_foreign_host_names_are_refused(server: GuardedServer, path: str) -> None:
    # A DNS rebinding page reaches 127.0.0.1 under its own name: the Host header says so
    for host in (
        "rebind.example",
        f"rebind.example:{server.port}",
        f"127.0.0.1.evil:{server.port}",
    ):
        response = httpx.get(f"{server.url}{path}", headers={"host": host})

        assert response.status_code == 403, host
        assert f"does not answer to the host name '{host}'" in response.json()["error"]["message"]

    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}", f"[::1]:{server.port}"):
        assert httpx.get(f"{server.url}{path}", headers={"host": host}).status_code == 200


def test_configured_host_names_are_served(tmp_path: Path) -> None:
    with GuardedServer(tmp_path / "d", allowed_hosts=["docs.lan", "Box.Local."]) as server:
        for host in ("docs.lan", f"docs.lan:{server.port}", "box.local"):
            assert httpx.get(f"{server.url}/documents", headers={"host": host}).status_code == 200
        assert httpx.get(f"{server.url}/documents", headers={"host": "x.lan"}).status_code == 403


def test_with_a_token_every_api_call_needs_it(tmp_path: Path) -> None:
    with GuardedServer(tmp_path / "d", token=TOKEN) as server:
        bare = httpx.get(f"{server.url}/documents")
        wrong = httpx.get(f"{server.url}/documents", headers={"authorization": "Bearer nope"})
        basic = httpx.get(f"{server.url}/documents", headers={"authorization": f"Basic {TOKEN}"})
        right = httpx.get(f"{server.url}/documents", headers={"authorization": f"Bearer {TOKEN}"})
        upload = _upload(server, {"content-type": "application/pdf"})
        page = httpx.get(f"{server.url}/")
        script = httpx.get(f"{server.url}/static/app.js")
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=TOKEN, max_retries=0)
        models = [m.id for m in client.models.list()]
        answer = client.chat.completions.create(
            model="docchat", messages=[{"role": "user", "content": "ferry"}]
        )

    for refused in (bare, wrong, basic, upload):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Bearer realm="docchat-serve"'
        assert "needs its API token" in refused.json()["error"]["message"]
    assert right.status_code == 200 and right.json() == {"documents": []}
    assert page.status_code == 200 and script.status_code == 200  # the page asks for it
    assert models == ["docchat"]
    assert answer.choices[0].message.content


def test_without_a_token_only_this_machine_is_answered(tmp_path: Path) -> None:
    # uvicorn --factory docchat.wiring.local:local_app --host 0.0.0.0 cannot be stopped from binding
    # there: the app itself refuses peers that are not this machine
    with GuardedServer(tmp_path / "d") as server:
        app = server.served.server.config.app
        remote = TestClient(app, base_url="http://localhost", client=("192.0.2.7", 50000))
        local = TestClient(app, base_url="http://localhost", client=("127.0.0.1", 50000))

        refused = remote.get("/documents")
        assert local.get("/documents").status_code == 200

    assert refused.status_code == 403
    assert "no API token, so it answers only this machine" in refused.json()["error"]["message"]


def test_host_names_and_loopback() -> None:
    assert [host_name(h) for h in ("LocalHost:80", "[::1]:8000", "::1", "a.b.", "x:")] == [
        "localhost",
        "::1",
        "::1",
        "a.b",
        "x",
    ]
    assert all(map(is_loopback, ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost")))
    assert not any(map(is_loopback, ("0.0.0.0", "::", "192.168.1.4", "example.com", "")))


def test_the_cloud_app_answers_its_gateways_host_and_peers(chat_function_env: None) -> None:
    # Behind API Gateway the Host is the execute-api domain and the Lambda Web Adapter's
    # forwarded peer is the caller's address: Cognito/IAM guard it there, not LocalGuard
    app = cloud_app()
    client = TestClient(
        app,
        base_url="https://abc123.execute-api.eu-west-1.amazonaws.com",
        client=("203.0.113.9", 50000),
    )

    assert client.get("/v1/models").status_code == 200
    assert client.get("/", headers={"origin": "https://example.org"}).status_code == 200
    assert not any(m.cls is LocalGuard for m in app.user_middleware)
