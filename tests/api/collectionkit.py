"""Shared by the collection tests: two collections (`ferries` holds ferries.pdf, `bridges`
holds bridges.pdf), two users each reading one, and the matrix every route must pass."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

# Each user's question has its best passages in the other user's collection.
ANA_ASKS_BRIDGES = "Who built the stone bridge in 1320?"
OTHER_TEXT = ("Monks built", "City bridges", "bridges.pdf")

Call = Callable[..., httpx.Response]


def streamed(call: Call, path: str, user: Any, body: dict[str, Any]) -> str:
    """The whole event stream (or JSON) of a chat route, as text."""
    response = call("POST", path, user, json=body)
    assert response.status_code == 200, response.text
    return response.text


def chat_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    kind, events = "", []
    for line in text.splitlines():
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((kind, json.loads(line[len("data: ") :])))
    return events


def _same_not_found(outside: httpx.Response, missing: httpx.Response, doc_id: str) -> None:
    """A document outside the caller's collections answers exactly as a missing one."""
    assert outside.status_code == missing.status_code == 404
    body, nothing = outside.json(), missing.json()
    for shape in (body, nothing):
        shape["error"].pop("request_id", None)
    assert body["error"]["message"].replace(doc_id, "X") == nothing["error"]["message"].replace(
        "no-such-doc", "X"
    )
    assert body == {
        "error": {
            **nothing["error"],
            "message": nothing["error"]["message"].replace("no-such-doc", doc_id),
        }
    }


@dataclass
class Matrix:
    """Every route for `user`, who reads collection `own` (document `mine`) and not `other`'s
    document `theirs`. `call(method, path, user, **httpx kwargs)` reaches the app."""

    call: Call
    user: Any
    own: str
    mine: str
    theirs: str
    cloud: bool

    def run(self) -> None:
        self.documents()
        self.one_document_routes()
        self.uploads()
        self.chat()
        self.openai()
        self.conversations()
        if not self.cloud:
            self.upload_own()

    def documents(self) -> None:
        listed = self.call("GET", "/documents", self.user).json()["documents"]
        assert [d["doc_id"] for d in listed] == [self.mine]
        assert listed[0]["collections"] == [self.own]
        other = "bridges" if self.own == "ferries" else "ferries"
        assert self.call("GET", f"/documents?collection={other}", self.user).json() == {
            "documents": []
        }
        collections = self.call("GET", "/collections", self.user).json()
        assert collections["collections"] == [{"name": self.own, "documents": 1, "write": True}]
        assert collections["admin"] is False

    def one_document_routes(self) -> None:
        for suffix in ("", "/pages/1", "/file"):
            mine = self.call("GET", f"/documents/{self.mine}{suffix}", self.user)
            assert mine.status_code == 200, (suffix, mine.text)
            outside = self.call("GET", f"/documents/{self.theirs}{suffix}", self.user)
            missing = self.call("GET", f"/documents/no-such-doc{suffix}", self.user)
            _same_not_found(outside, missing, self.theirs)
        for method, path, body in (
            ("DELETE", f"/documents/{self.theirs}", None),
            ("PUT", f"/documents/{self.theirs}/collections", {"collections": [self.own]}),
        ):
            outside = self.call(method, path, self.user, json=body)
            missing = self.call(
                method, path.replace(self.theirs, "no-such-doc"), self.user, json=body
            )
            _same_not_found(outside, missing, self.theirs)

    def uploads(self) -> None:
        other = "bridges" if self.own == "ferries" else "ferries"
        if self.cloud:

            def ask(collection: str) -> httpx.Response:
                body = {"filename": "notes.pdf", "size": 100, "collection": collection}
                return self.call("POST", "/documents/upload-url", self.user, json=body)

            ticket = ask(self.own)
            assert ticket.status_code == 200, ticket.text
            assert ticket.json()["key"].startswith(f"collections/{self.own}/uploads/")
        else:

            def ask(collection: str) -> httpx.Response:
                return self.call(
                    "POST",
                    f"/documents?filename=notes.pdf&collection={collection}",
                    self.user,
                    content=b"%PDF-1.4 not really",
                    headers={"content-type": "application/pdf"},
                )

        refused = ask(other)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "access_denied"
        assert ask("default").status_code == 403

    def upload_own(self) -> None:
        response = self.call(
            "POST",
            f"/documents?filename=notes.pdf&collection={self.own}",
            self.user,
            content=Path(__file__).parents[2].joinpath("examples/pdfs/dmca.pdf").read_bytes(),
            headers={"content-type": "application/pdf"},
        )
        assert response.status_code == 202, response.text
        assert response.json()["collections"] == [self.own]

    def chat(self) -> None:
        question = "Who built the stone bridge?" if self.own == "ferries" else "ferry ticket?"
        body = {"messages": [{"role": "user", "content": question}]}
        text = streamed(self.call, "/chat", self.user, body)
        self.only_mine(text)
        events = chat_events(text)
        kinds = [k for k, _ in events]
        assert kinds[-1] == "done", kinds
        cited = {c["doc_id"] for k, e in events if k == "citations" for c in e["citations"]}
        assert cited <= {self.mine}
        sourced = {p["doc_id"] for k, e in events if k == "sources" for p in e["passages"]}
        assert sourced == {self.mine}
        # Asking within the other's document or collection finds nothing of it
        scoped = {**body, "doc_ids": [self.theirs]}
        outside = self.call("POST", "/chat", self.user, json=scoped)
        assert outside.status_code == 404
        self.refused_scope("/chat", body)

    def refused_scope(self, path: str, body: dict[str, Any]) -> None:
        """Asking inside a collection the user cannot read is refused (403), naming only the
        collection asked for, whether or not it exists, and none of the user's own."""
        other = "bridges" if self.own == "ferries" else "ferries"
        for asked in ([other], [self.own, other], ["no-such-collection"]):
            refused = self.call(
                "POST", path, self.user, json={**body, "scope": {"collections": asked}}
            )
            assert refused.status_code == 403, refused.text
            error = refused.json()["error"]
            assert error["code"] == "access_denied"
            named = asked[-1]
            assert f"may not read the collection {named!r}" in error["message"], error
            assert self.own not in error["message"] and self.theirs not in refused.text

    def openai(self) -> None:
        question = "Who built the stone bridge?" if self.own == "ferries" else "ferry ticket?"
        body: dict[str, Any] = {"messages": [{"role": "user", "content": question}]}
        text = streamed(self.call, "/v1/chat/completions", self.user, body)
        self.only_mine(text)
        text = streamed(self.call, "/v1/chat/completions", self.user, {**body, "stream": True})
        self.only_mine(text)
        outside = self.call(
            "POST", "/v1/chat/completions", self.user, json={**body, "doc_ids": [self.theirs]}
        )
        assert outside.status_code == 404
        self.refused_scope("/v1/chat/completions", body)

    def conversations(self) -> None:
        body = {
            "messages": [{"role": "user", "content": "What does the ferry cost?"}],
            "conversation_id": f"c-{self.own}",
            "scope": {"collections": [self.own]},
        }
        streamed(self.call, "/chat", self.user, body)
        saved = self.call("GET", f"/conversations/c-{self.own}", self.user).json()
        assert saved["messages"][0]["scope"] == {"collections": [self.own], "doc_ids": None}
        for message in saved["messages"]:
            for citation in message["citations"]:
                assert citation["doc_id"] == self.mine
        # The answer's rating keeps the versions of the caller's own documents only
        path = f"/conversations/c-{self.own}/answers/1/feedback"
        rated = self.call("PUT", path, self.user, json={"rating": "up", "comment": "mine"})
        assert rated.status_code == 200, rated.text
        assert set(rated.json()["feedback"]["versions"]) <= {self.mine}
        assert self.theirs not in rated.text
        listed = self.call("GET", f"/conversations/c-{self.own}/feedback", self.user).json()
        assert listed["ratings"] == [rated.json()]
        # The team's question set is an admin's: a reader is refused, and nothing is cleared
        for method in ("GET", "DELETE"):
            refused = self.call(method, "/feedback", self.user)
            assert refused.status_code == 403, (method, refused.text)
            assert refused.json()["error"]["code"] == "access_denied"
            assert "mine" not in refused.text and self.theirs not in refused.text
        listed = self.call("GET", f"/conversations/c-{self.own}/feedback", self.user).json()
        assert listed["ratings"] == [rated.json()]

    def only_mine(self, text: str) -> None:
        assert self.theirs not in text
        for words in OTHER_TEXT if self.own == "ferries" else ("Island ferries", "ferries.pdf"):
            assert words not in text, words


def not_theirs(conversation_id: str, call: Call, user: Any, *, owner: Any) -> None:
    """Another user's conversation, and its answers' feedback, are not found: neither read nor
    changed (the owner's rating stays as it was)."""
    assert call("GET", f"/conversations/{conversation_id}", user).status_code == 404
    feedback = f"/conversations/{conversation_id}/answers/1/feedback"
    for method, path, body in (
        ("GET", f"/conversations/{conversation_id}/feedback", None),
        ("PUT", feedback, {"rating": "down", "comment": "not mine"}),
        ("DELETE", feedback, None),
    ):
        refused = call(method, path, user, json=body)
        assert refused.status_code == 404, (method, path, refused.text)
        assert refused.json()["error"]["code"] == "conversation_not_found"
        assert "mine" not in refused.text
    kept = call("GET", f"/conversations/{conversation_id}/feedback", owner).json()["ratings"]
    assert [(r["feedback"]["rating"], r["feedback"]["comment"]) for r in kept] == [("up", "mine")]


def mcp_session(url: str, headers: dict[str, str], mine: str, theirs: str) -> dict[str, Any]:
    """The MCP tools and a resource, called as the user these headers name."""

    async def run() -> dict[str, Any]:
        async with (
            httpx.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return {
                "documents": await client.call_tool("list_documents", {}),
                "search": await client.call_tool("search", {"query": "stone bridge monks"}),
                "read": await client.call_tool(
                    "read_pages", {"doc_id": theirs, "first_page": 1, "last_page": 1}
                ),
                "ask": await client.call_tool("ask", {"question": "Who built the stone bridge?"}),
                "page": await client.read_resource(f"docchat://documents/{mine}/pages/1"),
                "resources": await client.list_resources(),
            }

    found: dict[str, Any] = anyio.run(run)
    return found


def check_mcp(found: dict[str, Any], mine: str, theirs: str) -> None:
    listed = [d["doc_id"] for d in found["documents"].structured_content["documents"]]
    assert listed == [mine]
    passages = found["search"].structured_content["passages"]
    assert {p["doc_id"] for p in passages} == {mine}
    assert found["read"].is_error
    assert re.search(rf"no document with id '{theirs}'", found["read"].content[0].text)
    assert all(c["doc_id"] == mine for c in found["ask"].structured_content["citations"])
    assert "Monks" not in json.dumps(found["ask"].structured_content)
    assert found["page"].contents[0].text
    assert theirs not in json.dumps([str(r.uri) for r in found["resources"].resources])


def check_health(call: Call, admin: Any, *readers: Any) -> None:
    """/health counts, for each reader, the documents and chunks of their collections only
    (each of the two collections holds one document); an admin's are the stack's totals."""

    def counts(user: Any) -> tuple[int, int]:
        response = call("GET", "/health", user)
        assert response.status_code == 200, response.text
        checks = response.json()["checks"]
        return checks["registry"]["documents"], checks["index"]["chunks"]

    documents, chunks = counts(admin)
    seen = [counts(user) for user in readers]
    assert documents == 2
    assert [d for d, _ in seen] == [1] * len(readers)
    assert all(0 < c < chunks for _, c in seen), (chunks, seen)
    assert sum(c for _, c in seen) == chunks
