"""/mcp inside the chat API, as `docchat serve` and the stack's chat function serve it: under a
real uvicorn on 127.0.0.1, driven by the official SDK's streamable HTTP client, signed in the
way the rest of the API is (the local server's token; API Gateway's Cognito claims in the Web
Adapter's request-context header), with links to the page the caller reached."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from docchat.config import Settings
from docchat.serve.access import NO_MAPPING, cognito_access_for
from docchat.serve.app import create_app
from docchat.serve.identity import REQUEST_CONTEXT, cognito_user
from docchat.serve.mcp_mount import McpMount
from docchat.serve.state import SignIn
from docchat.wiring.local import guarded_local_app
from tests.chatkit import ServedApp
from tests.conftest import WordEmbedder, fresh_python
from tests.mcpkit import backend_of, ingested

#: Who a request is and what they may do, as the stack without a groups mapping says.
CLAIMED = cognito_access_for(lambda: NO_MAPPING, cognito_user)

pytestmark = pytest.mark.slow  # two ingested libraries and two uvicorns

TOKEN = "local-token-for-tests"
STAGE_DOMAIN = "abc123.execute-api.eu-west-1.amazonaws.com"
POOL = "eu-west-1_Example1"


def _context(sub: str | None) -> str:
    """API Gateway's request context as the Web Adapter hands it on, for a /v1/mcp call."""
    context: dict[str, Any] = {"domainName": STAGE_DOMAIN, "path": "/v1/mcp", "stage": "v1"}
    if sub:
        context["authorizer"] = {"claims": {"sub": sub, "email": f"{sub}@example.com"}}
    return json.dumps(context)


class Served:
    def __init__(self, folder: Path) -> None:
        data_dir = folder / "data"
        self.ids = ingested(data_dir, WordEmbedder())
        backend = backend_of(data_dir, WordEmbedder())
        self.backend = backend
        local = guarded_local_app(Settings(data_dir=data_dir), lambda: backend, token=TOKEN)
        cloud = create_app(
            lambda: backend,
            access_of=CLAIMED,
            sign_in=lambda: SignIn(
                mode="cognito",
                region="eu-west-1",
                domain="https://docchat-x.auth.eu-west-1.amazoncognito.com",
                client_id="client",
                scopes="openid email",
                issuer=f"https://cognito-idp.eu-west-1.amazonaws.com/{POOL}",
            ),
        )
        self.local = ServedApp(local, lifespan="on")
        self.cloud = ServedApp(cloud, lifespan="on")

    def url(self, served: ServedApp, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{served.port}{path}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    running = Served(tmp_path_factory.mktemp("mcp-mounted"))
    running.local.start()
    running.cloud.start()
    yield running
    running.local.stop()
    running.cloud.stop()
    running.backend.library.index.close()  # type: ignore[attr-defined]


def _calls(url: str, headers: dict[str, str]) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with (
            httpx.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return {
                "tools": await client.list_tools(),
                "documents": await client.call_tool("list_documents", {}),
                "search": await client.call_tool("search", {"query": "return ticket"}),
            }

    found: dict[str, Any] = anyio.run(run)
    return found


def test_docchat_serve_answers_mcp_with_its_token(served: Served) -> None:
    found = _calls(served.url(served.local), {"Authorization": f"Bearer {TOKEN}"})

    assert [t.name for t in found["tools"].tools] == [
        "search",
        "read_pages",
        "list_documents",
        "ask",
    ]
    listed = {d["doc_id"] for d in found["documents"].structured_content["documents"]}
    assert listed == set(served.ids.values())
    top = found["search"].structured_content["passages"][0]
    ferries = served.ids["ferries"]
    # The link opens the page on the server the caller reached, not a configured default.
    assert top["link"] == f"http://127.0.0.1:{served.local.port}/#doc={ferries}&page=2"


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token"])
def test_docchat_serve_refuses_mcp_without_its_token(
    served: Served, authorization: str | None
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    response = httpx.post(served.url(served.local), json=listing, headers=headers)

    assert response.status_code == 401
    assert response.json()["error"]["status"] == 401
    assert "tools" not in response.text


def test_the_chat_function_answers_mcp_for_the_cognito_user(served: Served) -> None:
    found = _calls(served.url(served.cloud), {REQUEST_CONTEXT: _context("user-1")})

    ferries = served.ids["ferries"]
    top = found["search"].structured_content["passages"][0]
    assert top["link"] == f"https://{STAGE_DOMAIN}/v1/#doc={ferries}&page=2"


def test_the_chat_function_refuses_mcp_without_the_sign_ins_claims(served: Served) -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", REQUEST_CONTEXT: _context(None)}

    response = httpx.post(served.url(served.cloud), json=listing, headers=headers)

    assert response.status_code == 401
    assert "requestContext.authorizer.claims.sub" in response.json()["error"]["message"]


def test_protected_resource_metadata_names_the_user_pool(served: Served) -> None:
    response = httpx.get(
        served.url(served.cloud, "/.well-known/oauth-protected-resource"),
        headers={
            REQUEST_CONTEXT: json.dumps(
                {"domainName": STAGE_DOMAIN, "path": "/v1/.well-known/oauth-protected-resource"}
            )
        },
    )

    assert response.status_code == 200
    assert response.json() == {
        "resource": f"https://{STAGE_DOMAIN}/v1/mcp",
        "resource_name": "docchat",
        "authorization_servers": [f"https://cognito-idp.eu-west-1.amazonaws.com/{POOL}"],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["openid", "email"],
    }


def test_mcp_outside_the_servers_lifespan_is_a_clear_503(served: Served) -> None:
    app = create_app(
        lambda: served.backend, access_of=cognito_access_for(lambda: NO_MAPPING, cognito_user)
    )
    client = TestClient(app)  # no `with`: the lifespan does not run

    response = client.post("/mcp", json={}, headers={REQUEST_CONTEXT: _context("user-1")})

    assert response.status_code == 503
    assert "lifespan" in response.json()["error"]["message"]


def test_mcp_that_cannot_start_is_a_clear_503_and_the_other_routes_go_on(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: McpMount) -> None:
        raise ImportError("the MCP SDK is missing")

    monkeypatch.setattr(McpMount, "_build", broken)
    app = create_app(
        lambda: served.backend, access_of=cognito_access_for(lambda: NO_MAPPING, cognito_user)
    )
    with TestClient(app) as client:
        response = client.post("/mcp", json={}, headers={REQUEST_CONTEXT: _context("user-1")})
        health = client.get("/health", headers={REQUEST_CONTEXT: _context("user-1")})

    assert response.status_code == 503
    assert "could not start" in response.json()["error"]["message"]
    assert health.status_code == 200


def test_the_chat_api_imports_the_mcp_sdk_only_when_mcp_is_first_called() -> None:
    # The SDK costs about 0.7 s of the chat Lambda's cold start on Python 3.13 (bench/chat.py);
    # building the app and running its lifespan must not pay it, the first /mcp request does.
    probe = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "from docchat.serve.app import create_app\n"
        "from docchat.serve.identity import cognito_user\n"
        "from docchat.serve.access import NO_MAPPING, cognito_access_for\n"
        "app = create_app(\n"
        "    lambda: None, access_of=cognito_access_for(lambda: NO_MAPPING, cognito_user)\n"
        ")\n"
        "with TestClient(app) as client:\n"
        "    before = 'mcp' in sys.modules\n"
        "    client.post('/mcp', json={})\n"
        "    after = 'mcp' in sys.modules\n"
        "print(before, after)\n"
    )
    assert fresh_python(probe).split()[-2:] == ["False", "True"]  # after the request logs
