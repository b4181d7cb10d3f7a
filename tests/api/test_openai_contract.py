"""/v1 follows the OpenAI API where docchat does not support something, driven by the official
`openai` SDK as the client: its exceptions parse OpenAI's error shape
(https://platform.openai.com/docs/guides/error-codes), so a refusal it cannot read would show
here as a missing `param`, `code` or `type`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from docchat.answer.backend import ChatBackend
from docchat.limits import MAX_MESSAGE_CHARS, MAX_MESSAGES, MAX_TOTAL_CHARS
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.search.library import Library
from docchat.serve.app import create_app
from tests.chatkit import ScriptedModel, ServedApp, library_of, tuned_config

QUESTION = [{"role": "user", "content": "When did the new bridge open?"}]
PAGES = {"bridges": ["A new bridge opened in 2004; it carries four lanes and a cycle path."]}


class FreshModelBackend(ChatBackend):
    """Every answer from a new scripted model: a search, then the answer, with its usage."""

    def agent(self) -> Any:
        from docchat.answer.agent import Agent

        search = ToolUse(id="t1", name="search_documents", input={"query": "new bridge"})
        model = ScriptedModel(
            [
                [search, TurnEnd("tool_use", 12, 3)],
                [TextDelta("It opened in 2004 [1]."), TurnEnd("end_turn", 40, 9)],
            ]
        )
        return Agent(self.library, model, self.config)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    library: Library = library_of(tmp_path_factory.mktemp("openai") / "i.sqlite3", PAGES)
    backend = FreshModelBackend(library=library, model=None, config=tuned_config())
    app = ServedApp(create_app(lambda: backend))
    app.start()
    yield f"http://127.0.0.1:{app.port}"
    app.stop()


@pytest.fixture
def client(served: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served}/v1", api_key="unused", max_retries=0)


@pytest.mark.parametrize(
    ("changes", "param", "code"),
    [
        ({"temperature": 5}, "temperature", "above_max_value"),
        ({"top_p": -0.5}, "top_p", "below_min_value"),
        ({"n": 3}, "n", "unsupported_value"),
        ({"logprobs": True}, "logprobs", "unsupported_value"),
        ({"stream_options": {"include_usage": True}}, None, "invalid_value"),
        ({"response_format": {"type": "json_object"}}, "response_format", "unsupported_value"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
            "response_format",
            "unsupported_value",
        ),
    ],
    ids=[
        "temperature-5",
        "top_p-negative",
        "n-3",
        "logprobs",
        "stream_options-unstreamed",
        "response_format-json",
        "response_format-json_schema",
    ],
)
def test_unsupported_or_out_of_range_values_are_refused_as_openai_refuses_them(
    client: openai.OpenAI, changes: dict[str, Any], param: str | None, code: str
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="docchat", messages=QUESTION, **changes)  # type: ignore[call-overload]

    error = refused.value
    assert error.status_code == 400
    assert (error.type, error.param, error.code) == ("invalid_request_error", param, code)
    assert error.request_id  # OpenAI's x-request-id, which the SDK reads
    if param == "n":
        assert "docchat writes one choice" in error.message


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        ([{"role": "user", "content": "x" * (MAX_MESSAGE_CHARS + 1)}], "messages[0]"),
        (QUESTION * (MAX_MESSAGES + 1), "messages"),
        ([{"role": "user", "content": "x" * MAX_MESSAGE_CHARS}] * 6, None),
    ],
    ids=["message-too-long", "too-many-messages", "conversation-too-long"],
)
def test_the_message_limits_of_chat_apply(
    client: openai.OpenAI, messages: list[dict[str, str]], param: str | None
) -> None:
    assert MAX_MESSAGE_CHARS * 6 > MAX_TOTAL_CHARS

    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="docchat", messages=messages)  # type: ignore[arg-type]

    assert (refused.value.status_code, refused.value.param) == (400, param)


def test_a_completion_of_a_model_docchat_does_not_serve_is_not_found(
    client: openai.OpenAI,
) -> None:
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-4o", messages=QUESTION)  # type: ignore[arg-type]

    assert unknown.value.status_code == 404
    assert (unknown.value.type, unknown.value.param, unknown.value.code) == (
        "invalid_request_error",
        "model",
        "model_not_found",
    )
    assert "this server serves 'docchat'" in unknown.value.message


def test_text_responses_and_token_limits_are_accepted(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="docchat",
        messages=QUESTION,  # type: ignore[arg-type]
        response_format={"type": "text"},
        max_tokens=50,
        max_completion_tokens=50,
    )

    assert completion.choices[0].message.content == "It opened in 2004 [1]."


def test_a_model_is_retrieved_and_an_unknown_one_is_not_found(client: openai.OpenAI) -> None:
    model = client.models.retrieve("docchat")

    assert (model.id, model.object, model.owned_by) == ("docchat", "model", "docchat")
    with pytest.raises(openai.NotFoundError) as unknown:
        client.models.retrieve("gpt-4o")
    assert (unknown.value.code, unknown.value.param) == ("model_not_found", "model")


def test_include_usage_sends_a_last_chunk_with_the_answers_usage(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="docchat",
            messages=QUESTION,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    # Every chunk has `usage`, null but on the last, which has no choices
    *answer, last = chunks
    assert all(c.usage is None and c.choices for c in answer)
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (52, 12)
    assert last.usage.total_tokens == 64
    # The official SDK reads OpenAI's cached-token count, and keeps docchat's cost beside it
    assert last.usage.prompt_tokens_details is not None
    assert last.usage.prompt_tokens_details.cached_tokens == 0
    assert (last.usage.model_extra or {}).get("cost_usd", "absent") is None  # no price: null
    text = "".join(c.choices[0].delta.content or "" for c in answer)
    assert text == "It opened in 2004 [1]."


def test_without_include_usage_chunks_carry_no_usage(served: str) -> None:
    body = {"model": "docchat", "messages": QUESTION, "stream": True}
    with httpx.stream("POST", f"{served}/v1/chat/completions", json=body, timeout=30) as answer:
        lines = [line for line in answer.iter_lines() if line.startswith("data: {")]

    assert lines and not any('"usage"' in line for line in lines)
