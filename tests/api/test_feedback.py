"""Feedback on saved answers over HTTP (a real uvicorn on 127.0.0.1): rate, change, comment,
clear, read back; each user's own; gone with the conversation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.limits import MAX_FEEDBACK_CHARS
from docchat.models import DEFAULT_COLLECTION, RatedQuestion
from docchat.search.library import Library
from docchat.serve.access import GroupsMap, Rights, cognito_access_for
from docchat.serve.app import create_app
from docchat.serve.identity import cognito_user
from docchat.wiring.cloud import cloud_app
from tests.api.test_conversations import ANA, ANSWER, BO, QUESTION, Api, FreshModelBackend, api
from tests.chatkit import ServedApp, library, tuned_config
from tests.unit.test_conversation_stores import conversations_table

__all__ = ["api", "library"]  # the fixtures

FEEDBACK = "/conversations/c-1/answers/1/feedback"


def _rate(api: Api, user: dict[str, str], path: str = FEEDBACK, **body: Any) -> Any:
    return api.call("PUT", path, user, json=body)


def test_an_answer_is_rated_with_its_question_citations_and_document_versions(api: Api) -> None:
    # Given a saved question and its cited answer
    api.chat(ANA, conversation_id="c-1")

    # When the user rates the answer up with a comment
    rated = _rate(api, ANA, rating="up", comment="  The right page.  ")

    # Then the rating is answered back with what it rates
    assert rated.status_code == 200, rated.text
    body = rated.json()
    assert (body["position"], body["question"], body["answer"]) == (1, QUESTION, ANSWER)
    assert [c["doc_id"] for c in body["citations"]] == ["bridges"]
    feedback = body["feedback"]
    assert (feedback["rating"], feedback["comment"]) == ("up", "The right page.")
    assert feedback["versions"] == {"bridges": "v"}
    assert isinstance(feedback["at"], float)
    # and the conversation shows it on the answer, not on the question
    messages = api.call("GET", "/conversations/c-1", ANA).json()["messages"]
    assert "feedback" not in messages[0]
    assert messages[1]["feedback"] == feedback
    assert api.call("GET", "/conversations/c-1/feedback", ANA).json() == {"ratings": [body]}


def test_a_rating_is_changed_and_cleared(api: Api) -> None:
    api.chat(ANA, conversation_id="c-1")
    _rate(api, ANA, rating="up", comment="Good.")

    changed = _rate(api, ANA, rating="down")
    assert changed.status_code == 200
    assert (changed.json()["feedback"]["rating"], changed.json()["feedback"]["comment"]) == (
        "down",
        "",
    )
    [only] = api.call("GET", "/conversations/c-1/feedback", ANA).json()["ratings"]
    assert only["feedback"]["rating"] == "down"

    cleared = api.call("DELETE", FEEDBACK, ANA)
    assert cleared.status_code == 200
    assert cleared.json() == {"id": "c-1", "position": 1, "status": "cleared"}
    assert api.call("GET", "/conversations/c-1/feedback", ANA).json() == {"ratings": []}
    messages = api.call("GET", "/conversations/c-1", ANA).json()["messages"]
    assert "feedback" not in messages[1]
    assert api.call("DELETE", FEEDBACK, ANA).status_code == 200  # nothing left to clear


def test_feedback_routes_check_their_inputs(api: Api) -> None:
    api.chat(ANA, conversation_id="c-1")

    too_long = _rate(api, ANA, rating="up", comment="x" * (MAX_FEEDBACK_CHARS + 1))
    assert too_long.status_code == 422
    error = too_long.json()["error"]
    assert error["details"][0]["field"] == "comment"
    assert str(MAX_FEEDBACK_CHARS) in error["message"]
    assert _rate(api, ANA, rating="meh").status_code == 422
    assert api.call("PUT", FEEDBACK, ANA, json={}).status_code == 422
    # A question, or a position past the end, is no answer to rate
    for path in ("/conversations/c-1/answers/0/feedback", "/conversations/c-1/answers/7/feedback"):
        refused = _rate(api, ANA, path, rating="up")
        assert refused.status_code == 404, refused.text
        assert refused.json()["error"]["code"] == "answer_not_found"
    negative = _rate(api, ANA, "/conversations/c-1/answers/-1/feedback", rating="up")
    assert negative.status_code == 422


def test_another_users_feedback_is_neither_read_nor_changed(api: Api) -> None:
    # Given Ana's rated answer
    api.chat(ANA, conversation_id="c-1")
    _rate(api, ANA, rating="up", comment="Ana's")

    # Then Bo's every feedback request on it answers as for a conversation that does not exist
    missing = api.call("GET", "/conversations/no-such/feedback", BO).json()["error"]
    for method, path, body in (
        ("GET", "/conversations/c-1/feedback", None),
        ("PUT", FEEDBACK, {"rating": "down"}),
        ("DELETE", FEEDBACK, None),
    ):
        refused = api.call(method, path, BO, json=body)
        assert refused.status_code == 404, (method, refused.text)
        error = refused.json()["error"]
        assert error["code"] == missing["code"] == "conversation_not_found"
        assert error["message"] == missing["message"].replace("no-such", "c-1")
        assert "Ana's" not in refused.text
    [kept] = api.call("GET", "/conversations/c-1/feedback", ANA).json()["ratings"]
    assert (kept["feedback"]["rating"], kept["feedback"]["comment"]) == ("up", "Ana's")


def test_feedback_goes_with_its_conversation_and_with_an_answer_asked_again(api: Api) -> None:
    api.chat(ANA, conversation_id="c-1")
    _rate(api, ANA, rating="down")

    # Asked again (after no saved message), the new answer has no rating
    api.chat(ANA, conversation_id="c-1", after=0)
    assert api.call("GET", "/conversations/c-1/feedback", ANA).json() == {"ratings": []}

    _rate(api, ANA, rating="up")
    assert api.call("DELETE", "/conversations/c-1", ANA).status_code == 200
    assert api.call("GET", "/conversations/c-1/feedback", ANA).status_code == 404
    api.chat(ANA, conversation_id="c-1")  # the same id again: a new conversation, unrated
    assert api.call("GET", "/conversations/c-1/feedback", ANA).json() == {"ratings": []}


def test_the_cloud_app_keeps_feedback_in_the_conversations_item(
    monkeypatch: pytest.MonkeyPatch, chat_function_env: None
) -> None:
    # Given the chat function as the stack configures it, a saved answer in its table in moto
    monkeypatch.setenv("DOCCHAT_API_AUTH", "COGNITO")
    monkeypatch.setenv("DOCCHAT_AUTH_DOMAIN", "https://docchat-x.auth.eu-west-1.amazoncognito.com")
    monkeypatch.setenv("DOCCHAT_AUTH_CLIENT_ID", "abc123")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    messages = '[{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A."}]'
    with mock_aws():
        table = conversations_table("docchat-conversations", region="eu-west-1")
        item = {"user": "sub-ana", "conversation_id": "c-1", "title": "Q?", "messages": messages}
        table.put_item(Item={**item, "created": 1, "updated": 2})
        client = TestClient(cloud_app())

        # When Ana rates the answer
        rated = client.put(FEEDBACK, headers=ANA, json={"rating": "up", "comment": "ok"})

        # Then the item holds it, and only Ana reaches it
        assert rated.status_code == 200, rated.text
        stored = table.get_item(Key={"user": "sub-ana", "conversation_id": "c-1"})["Item"]
        assert '"feedback": {"rating": "up", "comment": "ok"' in stored["messages"]
        assert client.get("/conversations/c-1/feedback", headers=BO).status_code == 404
        assert client.put(FEEDBACK, headers=BO, json={"rating": "down"}).status_code == 404
        [kept] = client.get("/conversations/c-1/feedback", headers=ANA).json()["ratings"]
        assert kept["feedback"]["rating"] == "up"


ADMIN = {
    "x-amzn-request-context": json.dumps(
        {
            "authorizer": {
                "claims": {"sub": "sub-root", "token_use": "id", "cognito:groups": "admins"}
            }
        }
    )
}
TEAM = GroupsMap(
    everyone=Rights(read=[DEFAULT_COLLECTION], write=[DEFAULT_COLLECTION]),
    admin_groups=["admins"],
)


@pytest.fixture
def team(library: Library, tmp_path: Path) -> Iterator[Api]:
    """The API of a stack whose Cognito group `admins` are its admins."""
    backend = FreshModelBackend(library=library, model=None, config=tuned_config())
    store = SqliteConversations(tmp_path / "conversations.sqlite3")
    access_of = cognito_access_for(lambda: TEAM, cognito_user)
    served = ServedApp(
        create_app(lambda: backend, conversations=lambda: store, access_of=access_of)
    )
    served.start()
    yield Api(f"http://127.0.0.1:{served.port}", store)
    served.stop()
    store.close()


def test_an_admin_exports_every_users_rated_answers_and_clears_them(team: Api) -> None:
    # Given Ana's answer rated up with a comment and Bo's rated down
    team.chat(ANA, conversation_id="c-1")
    team.chat(BO, conversation_id="c-9")
    _rate(team, ANA, rating="up", comment="The right page.")
    _rate(team, BO, "/conversations/c-9/answers/1/feedback", rating="down")

    # When a user who is not an admin asks for the set, or to clear it, they are refused
    for method in ("GET", "DELETE"):
        refused = team.call(method, "/feedback", ANA)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "access_denied"
        assert "The right page." not in refused.text

    # When the admin exports it
    exported = team.call("GET", "/feedback", ADMIN)

    # Then every rated answer is one JSON line with its user, question, citations and rating
    assert exported.status_code == 200, exported.text
    assert exported.headers["content-type"].startswith("application/jsonl")
    assert exported.headers["cache-control"] == "no-store"
    lines = [RatedQuestion.model_validate_json(line) for line in exported.text.splitlines()]
    assert [(q.user, q.conversation_id, q.feedback.rating) for q in lines] == [
        ("sub-ana", "c-1", "up"),
        ("sub-bo", "c-9", "down"),
    ]
    assert lines[0].question == QUESTION and lines[0].answer == ANSWER
    assert lines[0].feedback.comment == "The right page."
    assert [c.doc_id for c in lines[0].citations] == ["bridges"]

    # and clearing it clears every rating, keeps every answer
    cleared = team.call("DELETE", "/feedback", ADMIN)
    assert cleared.status_code == 200 and cleared.json() == {"cleared": 2}
    assert team.call("GET", "/feedback", ADMIN).text == ""
    assert team.call("GET", "/conversations/c-1/feedback", ANA).json() == {"ratings": []}
    kept = team.call("GET", "/conversations/c-1", ANA).json()["messages"]
    assert kept[1]["content"] == ANSWER
