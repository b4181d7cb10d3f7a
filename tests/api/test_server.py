"""The chat API served by a real uvicorn on 127.0.0.1: streaming, OpenAI clients, errors."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from docchat.answer.backend import ChatBackend
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.search.library import Library
from docchat.serve.app import MAX_BODY_BYTES, create_app
from tests.chatkit import ScriptedModel, ServedApp, library, tuned_config

__all__ = ["library"]  # the fixture

ANSWER = ["A new ", "bridge ", "opened ", "in 2004 ", "[1]."]


class Server:
    """The chat API over `backend`, served for real on 127.0.0.1."""

    def __init__(self, backend: ChatBackend) -> None:
        self.backend = backend
        self.served = ServedApp(create_app(lambda: backend))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.served.port}"

    def __enter__(self) -> Server:
        self.served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.served.stop()


def _model(pause: float = 0.0) -> ScriptedModel:
    search = ToolUse(id="t1", name="search_documents", input={"query": "new bridge opened"})
    return ScriptedModel(
        [
            [search, TurnEnd("tool_use", 12, 3)],
            [*(TextDelta(t) for t in ANSWER), TurnEnd("end_turn", 40, 9)],
        ],
        pause=pause,
    )


@pytest.fixture
def served(library: Library) -> Iterator[Server]:
    backend = ChatBackend(library=library, model=_model(pause=0.25), config=tuned_config())
    with Server(backend) as server:
        yield server


def _events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, object], float]]:
    kind = ""
    for line in lines:
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            yield kind, json.loads(line[len("data: ") :]), time.monotonic()


def test_chat_streams_the_first_delta_before_the_model_has_finished(served: Server) -> None:
    body = {"messages": [{"role": "user", "content": "When did the new bridge open?"}]}
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", f"{served.url}/chat", json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        received = list(_events(response.iter_lines()))

    kinds = [k for k, _, _ in received]
    assert kinds == [
        "status",
        "tool_call",
        "sources",
        *["delta"] * len(ANSWER),
        "citations",
        "done",
    ]
    first_delta_at = next(t for k, _, t in received if k == "delta")
    model = served.backend.model
    assert isinstance(model, ScriptedModel) and model.finished_at is not None
    # The model spends ~1 s on the answer; the first words reached the client well before.
    assert first_delta_at < model.finished_at - 0.5
    citations = received[-2][1]["citations"]
    assert isinstance(citations, list) and citations[0]["page"] == 2


def test_openai_client_gets_a_streamed_completion(served: Server) -> None:
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="not-needed", max_retries=0)

    stream = client.chat.completions.create(
        model="docchat",
        stream=True,
        messages=[{"role": "user", "content": "When did the new bridge open?"}],
    )
    chunks = list(stream)

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "".join(ANSWER)
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert (chunks[-1].model_extra or {})["citations"][0]["doc_id"] == "bridges"


def test_openai_client_gets_a_whole_completion(library: Library) -> None:
    backend = ChatBackend(library=library, model=_model(), config=tuned_config())
    with Server(backend) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-needed", max_retries=0)
        completion = client.chat.completions.create(
            model="docchat",
            messages=[
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "When did the new bridge open?"},
            ],
        )

    assert completion.choices[0].message.content == "".join(ANSWER)
    assert completion.usage is not None and completion.usage.total_tokens == 64
    assert (completion.model_extra or {})["citations"][0]["page"] == 2


def test_documents_and_health(served: Server) -> None:
    with httpx.Client(base_url=served.url, timeout=10) as client:
        listed = client.get("/documents").json()["documents"]
        one = client.get("/documents/bridges")
        missing = client.get("/documents/nope")
        health = client.get("/health").json()

    assert sorted(d["doc_id"] for d in listed) == ["bridges", "ferries"]
    assert one.status_code == 200 and one.json()["pages"] == 2
    assert missing.status_code == 404
    assert (
        missing.json()["error"]["message"]
        == "no document with id 'nope': GET /documents lists them"
    )
    assert health["status"] == "ok"
    assert health["checks"]["registry"] == {"status": "ok", "documents": 2}
    assert health["checks"]["model"] == {"status": "ok", "mode": "scripted"}


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"messages": []}, 422, "messages: List should have at least 1 item"),
        ({"messages": [{"role": "user", "content": "hi"}] * 51}, 422, "at most 50 items"),
        (
            {"messages": [{"role": "user", "content": "x" * 20_001}]},
            422,
            "at most 20000 characters",
        ),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, 422, "the last message must be"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, 422, "Input should be 'user'"),
        (
            {"messages": [{"role": "user", "content": " \n\t "}]},
            422,
            "messages.0.content: Value error, the message is only white space",
        ),
        (
            {"messages": [{"role": "user", "content": "hi"}], "doc_ids": ["nope"]},
            404,
            "unknown document ids: nope",
        ),
    ],
    ids=["empty", "too-many", "too-long", "not-user-last", "bad-role", "blank", "unknown-doc"],
)
def test_chat_rejects_bad_requests_clearly(
    served: Server, body: dict[str, object], status: int, message: str
) -> None:
    response = httpx.post(f"{served.url}/chat", json=body, timeout=10)

    assert response.status_code == status
    assert message in response.json()["error"]["message"]


def test_chat_rejects_malformed_json_and_oversized_bodies(served: Server) -> None:
    malformed = httpx.post(
        f"{served.url}/chat",
        content=b'{"messages": [',
        timeout=10,
        headers={"content-type": "application/json"},
    )
    huge = httpx.post(
        f"{served.url}/chat",
        content=b"x" * (MAX_BODY_BYTES + 1),
        timeout=10,
        headers={"content-type": "application/json"},
    )

    assert malformed.status_code == 400
    assert malformed.json()["error"]["message"] == "the body is not valid JSON"
    assert huge.status_code == 413


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "   "}],
        [{"role": "user", "content": [{"type": "text", "text": "\n "}]}],
        [
            {"role": "user", "content": "When did the new bridge open?"},
            {"role": "assistant", "content": "In 2004 [1]."},
            {"role": "user", "content": " "},
        ],
    ],
    ids=["text", "parts", "after-a-turn"],
)
def test_completions_refuse_a_blank_question(
    served: Server, messages: list[dict[str, object]]
) -> None:
    response = httpx.post(
        f"{served.url}/v1/chat/completions",
        json={"model": "docchat", "messages": messages},
        timeout=10,
    )

    # OpenAI answers an invalid request 400, in its error shape, naming the parameter
    at = f"messages[{len(messages) - 1}]"
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": f"Invalid '{at}': the user's message is only white space",
            "type": "invalid_request_error",
            "param": at,
            "code": "invalid_value",
        }
    }


def test_models_are_listed_as_openai_lists_them(served: Server) -> None:
    # https://platform.openai.com/docs/api-reference/models/list
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="not-needed", max_retries=0)

    models = list(client.models.list())
    raw = httpx.get(f"{served.url}/v1/models", timeout=10).json()

    assert [(m.id, m.object, m.owned_by) for m in models] == [("docchat", "model", "docchat")]
    assert raw == {
        "object": "list",
        "data": [
            {"id": "docchat", "object": "model", "created": 1_767_225_600, "owned_by": "docchat"}
        ],
    }
