"""`mcp_http_app` under a real uvicorn on 127.0.0.1, driven by the official SDK's streamable HTTP
client: each request answered for the caller its token names, the unnamed refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

from docchat.errors import CallerUnknownError, CloudThrottledError
from docchat.serve.access import Access
from docchat.serve.mcp import mcp_http_app
from tests.chatkit import ServedApp
from tests.conftest import WordEmbedder
from tests.mcpkit import WEB_URL, backend_of, ingested

MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class Server:
    """The app over the two PDFs; tokens `ana` (ferries only) and `bob` (everything)."""

    def __init__(self, folder: Path) -> None:
        data_dir = folder / "data"
        self.ids = ingested(data_dir, WordEmbedder(), own_collections=True)
        self.backend = backend_of(data_dir, WordEmbedder())
        self.callers = {
            "ana": Access(user="ana", read=frozenset({"ferries"})),
            "bob": Access(user="bob", admin=True),
        }
        app = mcp_http_app(lambda: self.backend, access_of=self.access_of, web_url=WEB_URL)
        self.served = ServedApp(app, lifespan="on")
        self.url = f"http://127.0.0.1:{self.served.port}/mcp"

    def access_of(self, request: Request) -> Access:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if token == "throttled":  # the access lookup behind the token fails (S3, Cognito...)
            raise CloudThrottledError("AWS is throttling s3:GetObject: try again shortly")
        if scheme.lower() != "bearer" or token not in self.callers:
            raise CallerUnknownError("sign in: send 'Authorization: Bearer <token>'")
        return self.callers[token]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("mcp-http"))
    running.served.start()
    yield running
    running.served.stop()
    running.backend.library.index.close()  # type: ignore[attr-defined]


def _session(server: Server, token: str, mode: str = "auto") -> dict[str, Any]:
    """Each tool called, a page read and two bad calls, signed in with `token`."""
    ferries, bridges = server.ids["ferries"], server.ids["bridges"]

    async def run() -> dict[str, Any]:
        async with (
            httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(server.url, http_client=http), mode=mode) as client,
        ):
            return {
                "tools": await client.list_tools(),
                "documents": await client.call_tool("list_documents", {}),
                "search": await client.call_tool("search", {"query": "return ticket"}),
                "read": await client.call_tool(
                    "read_pages", {"doc_id": bridges, "first_page": 1, "last_page": 1}
                ),
                "ask": await client.call_tool("ask", {"question": "What is a return fare?"}),
                "page": await client.read_resource(f"docchat://documents/{ferries}/pages/1"),
                "bad": await client.call_tool("search", {"query": ["not", "a", "string"]}),
                "unknown": await client.call_tool("search", {"query": "x", "doc_ids": ["nope"]}),
            }

    found: dict[str, Any] = anyio.run(run)
    return found


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_each_tool_and_a_page_over_streamable_http(server: Server, mode: str) -> None:
    found = _session(server, "bob", mode)

    ferries, bridges = server.ids["ferries"], server.ids["bridges"]
    assert [t.name for t in found["tools"].tools] == [
        "search",
        "read_pages",
        "list_documents",
        "ask",
    ]
    assert {d["doc_id"] for d in found["documents"].structured_content["documents"]} == {
        ferries,
        bridges,
    }
    top = found["search"].structured_content["passages"][0]
    assert (top["doc_id"], top["page_start"], top["link"]) == (
        ferries,
        2,
        f"{WEB_URL}#doc={ferries}&page=2",
    )
    [page] = found["read"].structured_content["pages"]
    assert page["text"] == "# Stone\n\nMonks built the stone bridge in 1320."
    citation = found["ask"].structured_content["citations"][0]
    assert (citation["doc_id"], citation["page"]) == (ferries, 2)
    assert found["page"].contents[0].text == (
        "# Ferries\n\nThe ferry to the island leaves every hour."
    )
    assert found["bad"].is_error
    assert (
        found["bad"]
        .content[0]
        .text.startswith("Invalid input for search: query: Input should be a valid string")
    )
    assert found["unknown"].is_error
    assert found["unknown"].content[0].text == (
        "unknown document ids: nope; list_documents lists the documents you can read"
    )


def test_a_callers_session_sees_only_their_documents(server: Server) -> None:
    found = _session(server, "ana")

    ferries, bridges = server.ids["ferries"], server.ids["bridges"]
    listed = [d["doc_id"] for d in found["documents"].structured_content["documents"]]
    assert listed == [ferries]
    assert found["read"].is_error
    assert found["read"].content[0].text == (
        f"no document with id {bridges!r}: list_documents lists the documents you can read"
    )
    assert found["search"].structured_content["passages"][0]["doc_id"] == ferries


def test_a_reader_after_an_admin_on_the_same_server_sees_only_their_documents(
    server: Server,
) -> None:
    # Given bob (an admin) has listed and searched every document on this server
    everything = _session(server, "bob")
    assert len(everything["documents"].structured_content["documents"]) == 2

    # When ana, who may read ferries only, searches for what is in bridges
    found = _session(server, "ana")

    # Then bridges does not exist for her (the library bob's call read was not hers to reuse)
    ferries = server.ids["ferries"]
    listed = [d["doc_id"] for d in found["documents"].structured_content["documents"]]
    assert listed == [ferries]
    assert {p["doc_id"] for p in found["search"].structured_content["passages"]} == {ferries}
    assert {c["doc_id"] for c in found["ask"].structured_content["citations"]} <= {ferries}


@pytest.mark.parametrize("authorization", [None, "Bearer mallory", "Basic YW5hOg=="])
def test_a_request_whose_caller_cannot_be_named_is_refused(
    server: Server, authorization: str | None
) -> None:
    headers = {**MCP_ACCEPT, **({"Authorization": authorization} if authorization else {})}

    answer = httpx.post(server.url, json=LIST_TOOLS, headers=headers, timeout=10)

    assert answer.status_code == 401
    assert answer.json() == {
        "error": {
            "status": 401,
            "message": "sign in: send 'Authorization: Bearer <token>'",
            "code": CallerUnknownError.code,
        }
    }


def test_a_caller_whose_access_cannot_be_read_gets_that_errors_status(server: Server) -> None:
    # The access lookup failing is not the caller's fault: not a 401 telling them to sign in
    headers = {**MCP_ACCEPT, "Authorization": "Bearer throttled"}

    answer = httpx.post(server.url, json=LIST_TOOLS, headers=headers, timeout=10)

    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == CloudThrottledError.code
    assert "throttling" in answer.json()["error"]["message"]


def test_the_sdk_client_without_a_token_does_not_connect(server: Server) -> None:
    async def connect() -> None:
        async with Client(server.url) as client:
            await client.list_tools()

    with pytest.raises(BaseExceptionGroup) as raised:
        anyio.run(connect)

    assert raised.group_contains(MCPError, match="Server returned an error response", depth=2)


def test_a_foreign_host_name_is_refused(server: Server) -> None:
    headers = {**MCP_ACCEPT, "Authorization": "Bearer bob", "Host": "attacker.example"}

    answer = httpx.post(server.url, json=LIST_TOOLS, headers=headers, timeout=10)

    assert answer.status_code == 421


def test_a_get_for_an_event_stream_is_answered_at_once_with_405(server: Server) -> None:
    # A stateless server can send nothing on a stream of its own: the SDK held each GET open
    # until the client left
    headers = {"Accept": "text/event-stream", "Authorization": "Bearer bob"}

    answer = httpx.get(server.url, headers=headers, timeout=5)

    assert answer.status_code == 405
    assert answer.headers["allow"] == "POST"
    assert "offers no event stream" in answer.json()["error"]["message"]
