"""Saved conversations over HTTP (a real uvicorn on 127.0.0.1): each route, each user's own.

The callers are told apart as the cloud stack tells them apart: by the Cognito `sub` in the
request context the Lambda Web Adapter forwards (`x-amzn-request-context`, see
docchat/serve/identity.py for the pages it copies).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.answer.agent import Agent
from docchat.answer.backend import ChatBackend
from docchat.limits import MAX_CONVERSATION_BYTES, MAX_TITLE_CHARS
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.models import StoredMessage
from docchat.search.library import Library
from docchat.serve.access import NO_MAPPING, cognito_access_for
from docchat.serve.app import create_app
from docchat.serve.identity import cognito_user
from docchat.wiring.cloud import cloud_app
from tests.chatkit import ScriptedModel, ServedApp, library, tuned_config
from tests.unit.test_conversation_stores import conversations_table as _conversations_table

#: Who a request is and what they may do, as the stack without a groups mapping says.
CLAIMED = cognito_access_for(lambda: NO_MAPPING, cognito_user)

__all__ = ["library"]  # the fixture

QUESTION = "When did the new bridge open?"
ANSWER = "A new bridge opened in 2004 [1]."


def _model() -> ScriptedModel:
    search = ToolUse(id="t1", name="search_documents", input={"query": "new bridge opened"})
    return ScriptedModel(
        [[search, TurnEnd("tool_use", 12, 3)], [TextDelta(ANSWER), TurnEnd("end_turn", 40, 9)]]
    )


@dataclass
class FreshModelBackend(ChatBackend):
    """Every answer from a new scripted model: search, then the answer citing [1]."""

    def agent(self) -> Agent:
        return Agent(self.library, _model(), self.config)


def as_user(sub: str) -> dict[str, str]:
    """The header the Web Adapter sends for a request a Cognito authorizer let through: the
    event's requestContext, whose authorizer.claims hold the ID token's claims."""
    context = {
        "resourcePath": "/{proxy+}",
        "httpMethod": "GET",
        "stage": "v1",
        "authorizer": {"claims": {"sub": sub, "email": f"{sub}@example.com", "token_use": "id"}},
        "identity": {"sourceIp": "203.0.113.7"},
    }
    return {"x-amzn-request-context": json.dumps(context)}


ANA, BO = as_user("sub-ana"), as_user("sub-bo")


@dataclass
class Api:
    url: str
    store: SqliteConversations

    def chat(self, user: dict[str, str], **body: Any) -> list[tuple[str, dict[str, Any]]]:
        body.setdefault("messages", [{"role": "user", "content": QUESTION}])
        with (
            httpx.Client(timeout=30) as client,
            client.stream("POST", f"{self.url}/chat", json=body, headers=user) as response,
        ):
            assert response.status_code == 200, response.read()
            return list(_events(response.iter_lines()))

    def call(self, method: str, path: str, user: dict[str, str], **kwargs: Any) -> httpx.Response:
        return httpx.request(method, f"{self.url}{path}", headers=user, timeout=30, **kwargs)


def _events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = ""
    for line in lines:
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            yield kind, json.loads(line[len("data: ") :])


@pytest.fixture
def api(library: Library, tmp_path: Path) -> Iterator[Api]:
    backend = FreshModelBackend(library=library, model=None, config=tuned_config())
    store = SqliteConversations(tmp_path / "conversations.sqlite3")
    app = create_app(
        lambda: backend,
        conversations=lambda: store,
        access_of=CLAIMED,
    )
    served = ServedApp(app)
    served.start()
    yield Api(f"http://127.0.0.1:{served.port}", store)
    served.stop()
    store.close()


def test_chat_with_a_conversation_id_saves_the_question_and_the_cited_answer(api: Api) -> None:
    events = api.chat(ANA, conversation_id="c-1")
    assert [k for k, _ in events][-2:] == ["citations", "done"]

    listed = api.call("GET", "/conversations", ANA)
    assert listed.status_code == 200
    [summary] = listed.json()["conversations"]
    assert summary["id"] == "c-1" and summary["title"] == QUESTION
    assert isinstance(summary["updated"], float)

    one = api.call("GET", "/conversations/c-1", ANA).json()
    assert [(m["role"], m["content"]) for m in one["messages"]] == [
        ("user", QUESTION),
        ("assistant", ANSWER),
    ]
    [cited] = one["messages"][1]["citations"]
    assert (cited["number"], cited["doc_id"], cited["page"]) == (1, "bridges", 2)
    assert one["messages"][0]["citations"] == []


def test_chat_adds_each_exchange_to_the_same_conversation(api: Api) -> None:
    api.chat(ANA, conversation_id="c-1")
    follow_up = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": "And the old one?"},
    ]
    api.chat(ANA, conversation_id="c-1", messages=follow_up)

    one = api.call("GET", "/conversations/c-1", ANA).json()
    assert [m["content"] for m in one["messages"]] == [QUESTION, ANSWER, "And the old one?", ANSWER]
    assert one["title"] == QUESTION  # the first question's


def test_chat_without_a_conversation_id_saves_nothing(api: Api) -> None:
    events = api.chat(ANA)

    assert [k for k, _ in events][-1] == "done"
    assert api.call("GET", "/conversations", ANA).json() == {"conversations": []}


def test_conversations_are_renamed_and_deleted(api: Api) -> None:
    api.chat(ANA, conversation_id="c-1")

    renamed = api.call("PATCH", "/conversations/c-1", ANA, json={"title": "  Bridges\n  "})
    assert renamed.status_code == 200
    assert renamed.json()["title"] == "Bridges"
    assert api.call("GET", "/conversations", ANA).json()["conversations"][0]["title"] == "Bridges"

    deleted = api.call("DELETE", "/conversations/c-1", ANA)
    assert deleted.status_code == 200
    assert deleted.json() == {"id": "c-1", "status": "deleted"}
    gone = api.call("GET", "/conversations/c-1", ANA)
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "conversation_not_found"
    assert api.call("DELETE", "/conversations/c-1", ANA).status_code == 404


def test_another_users_conversation_is_not_found(api: Api) -> None:
    api.chat(ANA, conversation_id="anas")

    assert api.call("GET", "/conversations", BO).json() == {"conversations": []}
    for method, kwargs in (("GET", {}), ("PATCH", {"json": {"title": "mine"}}), ("DELETE", {})):
        refused = api.call(method, "/conversations/anas", BO, **kwargs)
        assert refused.status_code == 404, method
        error = refused.json()["error"]
        assert error["status"] == 404 and "GET /conversations" in error["message"]
    # Bo chatting under Ana's id starts a conversation of his own; Ana's stays as it was
    api.chat(BO, conversation_id="anas", messages=[{"role": "user", "content": "Ferries?"}])

    anas = api.call("GET", "/conversations/anas", ANA).json()
    assert anas["title"] == QUESTION and len(anas["messages"]) == 2
    bos = api.call("GET", "/conversations/anas", BO).json()
    assert bos["title"] == "Ferries?" and bos["messages"][0]["content"] == "Ferries?"


def test_a_user_id_from_the_client_is_never_taken(api: Api) -> None:
    api.chat(ANA, conversation_id="anas")

    # No request context at all (not through API Gateway): who is asking is unknown
    bare = api.call("GET", "/conversations", {"x-user-id": "sub-ana"})
    assert bare.status_code == 401
    assert "x-amzn-request-context" in bare.json()["error"]["message"]
    # A body may not name a user either
    sneaky = api.call("PATCH", "/conversations/anas", BO, json={"title": "x", "user": "sub-ana"})
    assert sneaky.status_code == 404


def test_conversation_routes_check_their_inputs(api: Api) -> None:
    api.chat(ANA, conversation_id="c-1")

    title = "x" * (MAX_TITLE_CHARS + 1)
    too_long = api.call("PATCH", "/conversations/c-1", ANA, json={"title": title})
    assert too_long.status_code == 422
    assert too_long.json()["error"]["details"][0]["field"] == "title"
    blank = api.call("PATCH", "/conversations/c-1", ANA, json={"title": "   "})
    assert blank.status_code == 422
    bad_id = api.call("GET", "/conversations/not%20an%20id", ANA)
    assert bad_id.status_code == 422
    chat = api.call(
        "POST",
        "/chat",
        ANA,
        json={"messages": [{"role": "user", "content": "hi"}], "conversation_id": "../x"},
    )
    assert chat.status_code == 422
    assert chat.json()["error"]["details"][0]["field"] == "conversation_id"


def test_a_full_conversation_is_refused_before_the_answer(api: Api) -> None:
    api.store.start("sub-ana", "full", title="Full")
    almost = StoredMessage(role="user", content="x" * (MAX_CONVERSATION_BYTES - 100))
    api.store.append("sub-ana", "full", [almost])

    refused = api.call(
        "POST",
        "/chat",
        ANA,
        json={"messages": [{"role": "user", "content": "y" * 200}], "conversation_id": "full"},
    )

    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "conversation_full"
    assert "start a new conversation" in refused.json()["error"]["message"]


def test_a_server_without_conversations_says_so_and_still_chats(library: Library) -> None:
    backend = FreshModelBackend(library=library, model=None, config=tuned_config())
    served = ServedApp(create_app(lambda: backend))
    served.start()
    try:
        url = f"http://127.0.0.1:{served.port}"
        listed = httpx.get(f"{url}/conversations", timeout=30)
        assert listed.status_code == 501
        assert "keeps no conversations" in listed.json()["error"]["message"]
        body = {"messages": [{"role": "user", "content": QUESTION}]}
        assert httpx.post(f"{url}/chat", json=body, timeout=30).status_code == 200
        body["conversation_id"] = "c-1"
        assert httpx.post(f"{url}/chat", json=body, timeout=30).status_code == 501
    finally:
        served.stop()


def test_the_cloud_app_keeps_each_cognito_users_conversations_in_dynamodb(
    monkeypatch: pytest.MonkeyPatch, chat_function_env: None
) -> None:
    # Given the chat function as the stack configures it, its table in moto
    monkeypatch.setenv("DOCCHAT_API_AUTH", "COGNITO")
    monkeypatch.setenv("DOCCHAT_AUTH_DOMAIN", "https://docchat-x.auth.eu-west-1.amazoncognito.com")
    monkeypatch.setenv("DOCCHAT_AUTH_CLIENT_ID", "abc123")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with mock_aws():
        table = _conversations_table("docchat-conversations", region="eu-west-1")
        table.put_item(
            Item={
                "user": "sub-ana",
                "conversation_id": "c-1",
                "title": "Bridges",
                "created": 1,
                "updated": 2,
                "messages": "[]",
            }
        )
        client = TestClient(cloud_app())

        # Then each caller reaches the items under their own sub, and no one else's
        listed = client.get("/conversations", headers=ANA).json()["conversations"]
        assert [c["id"] for c in listed] == ["c-1"]
        assert client.get("/conversations", headers=BO).json() == {"conversations": []}
        assert client.get("/conversations/c-1", headers=BO).status_code == 404
        assert client.delete("/conversations/c-1", headers=BO).status_code == 404
        assert client.get("/conversations/c-1", headers=ANA).json()["title"] == "Bridges"
        # and a request without the gateway's context is refused
        assert client.get("/conversations").status_code == 401
