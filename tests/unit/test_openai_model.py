"""The OpenAI-compatible adapter against recorded streams (tests/fixtures/openai/README.md cites
the shapes): translation of the agent's messages, tool calls put back together from fragments,
usage, and every failure mapped onto the ModelError family with what to do."""

from __future__ import annotations

import json
import socket

import httpx2
import pytest

from docchat.adapters.openai_model import OpenAICompatibleModel, _Turn, request_body
from docchat.config import Settings
from docchat.errors import ConfigError, ModelAccessError, ModelError, ModelUnavailableError
from docchat.llm import Message, ModelEvent, TextDelta, ToolSpec, ToolUse, TurnEnd
from docchat.wiring import chat_model
from tests.conftest import REPO, fresh_python

FIXTURES = REPO / "tests" / "fixtures" / "openai"
BASE_URL = "http://127.0.0.1:11434/v1"
QUESTION = [{"role": "user", "content": "How tight are the head bolts?"}]
SEARCH = ToolSpec(
    name="search_documents",
    description="Search the documents.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
)


class Recorded:
    """An HTTP transport answering each request with the next recorded body and status."""

    def __init__(self, *fixtures: str, status: int = 200) -> None:
        self.fixtures = list(fixtures)
        self.status = status
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        name = self.fixtures.pop(0)
        kind = "text/event-stream" if name.endswith(".sse") else "application/json"
        content = (FIXTURES / name).read_bytes()
        return httpx2.Response(self.status, headers={"content-type": kind}, content=content)

    def body(self, number: int = 0) -> dict[str, object]:
        loaded: dict[str, object] = json.loads(self.requests[number].content)
        return loaded


def _model(transport: Recorded, api_key: str | None = None) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        base_url=BASE_URL,
        model_id="qwen3:8b",
        api_key=api_key,
        http_client=httpx2.Client(transport=httpx2.MockTransport(transport)),
    )


def _turn(model: OpenAICompatibleModel) -> list[ModelEvent]:
    return list(model.stream(system="Answer.", messages=QUESTION, tools=[SEARCH], max_tokens=256))


def test_openai_tool_call_split_across_chunks_becomes_one_tool_use() -> None:
    transport = Recorded("tool_call_split.sse")

    events = _turn(_model(transport))

    assert events == [
        TextDelta("I'll search the manuals"),
        TextDelta(" for that."),
        ToolUse(
            id="call_q8Ln2vXo",
            name="search_documents",
            input={"query": "torque for the M8 cylinder head bolts"},
        ),
        TurnEnd(stop_reason="tool_use", input_tokens=412, output_tokens=27),
    ]


def test_openai_content_deltas_stream_as_text_then_turn_end_with_usage() -> None:
    events = _turn(_model(Recorded("answer_turn.sse")))

    assert events == [
        TextDelta("Tighten the M8 cylinder head bolts"),
        TextDelta(" to 25 N·m in three passes [1]."),
        TextDelta(" Work from the centre outwards"),
        TextDelta(" and replace the gasket [2]."),
        TurnEnd(stop_reason="end_turn", input_tokens=903, output_tokens=31),
    ]


def test_openai_a_thinking_models_inline_reasoning_is_not_part_of_the_answer() -> None:
    events = _turn(_model(Recorded("thinking_inline.sse")))

    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Tighten the M8 cylinder head bolts to 25 N·m in three passes [1]."
    assert events[-1] == TurnEnd(stop_reason="end_turn", input_tokens=903, output_tokens=48)


def test_openai_text_that_only_looks_like_a_thinking_tag_is_kept() -> None:
    turn = _Turn()
    shown = [d.text for piece in ("<th", "is is not a tag> [1]") for d in turn.add(_delta(piece))]
    turn.finish_reason = "stop"
    shown += [e.text for e in turn.closing_events("m") if isinstance(e, TextDelta)]
    assert "".join(shown) == "<this is not a tag> [1]"
    # An answer shorter than the tag, at the end of the stream, is not lost either
    turn = _Turn()
    shown = [d.text for d in turn.add(_delta("<th"))]
    turn.finish_reason = "stop"
    shown += [e.text for e in turn.closing_events("m") if isinstance(e, TextDelta)]
    assert "".join(shown) == "<th"


def _delta(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def test_openai_interleaved_parallel_calls_keep_their_own_arguments() -> None:
    events = _turn(_model(Recorded("parallel_calls.sse")))

    assert events == [
        ToolUse(id="call_a1", name="list_documents", input={}),
        ToolUse(
            id="call_b2",
            name="read_pages",
            input={"doc_id": "manual-p1", "first_page": 41, "last_page": 42},
        ),
        TurnEnd(stop_reason="tool_use"),  # no usage chunk: zero tokens counted
    ]


def test_openai_ollama_whole_call_in_one_chunk() -> None:
    events = _turn(_model(Recorded("ollama_tool_call.sse")))

    assert events == [
        ToolUse(
            id="call_hk81qg8b",
            name="search_documents",
            input={"query": "torque for the M8 cylinder head bolts"},
        ),
        TurnEnd(stop_reason="tool_use"),
    ]


def test_openai_arguments_that_are_not_json_give_an_empty_input() -> None:
    # The agent validates {} against the tool's input model and tells the model what is missing
    # (tests/api/test_openai_chat.py follows that through to the next request).
    events = _turn(_model(Recorded("invalid_arguments.sse")))

    assert events[0] == ToolUse(id="call_bad1", name="search_documents", input={})


def test_openai_request_translates_tools_tool_calls_and_results() -> None:
    # Given a conversation in the agent's (Anthropic) shape after one tool round
    messages: list[Message] = [
        {"role": "user", "content": "How tight?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching."},
                {
                    "type": "tool_use",
                    "id": "c1",
                    "name": "search_documents",
                    "input": {"query": "q"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "[1] Manual, p. 41"},
                {"type": "text", "text": "That was the last tool call: answer now."},
            ],
        },
    ]

    # When it becomes a Chat Completions request
    body = request_body(
        model="qwen3:8b", system="Be brief.", messages=messages, tools=[SEARCH], max_tokens=99
    )

    # Then the assistant's call is a tool_calls entry and its result a role: tool message
    assert body == {
        "model": "qwen3:8b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "How tight?"},
            {
                "role": "assistant",
                "content": "Searching.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search_documents", "arguments": '{"query": "q"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "[1] Manual, p. 41"},
            {"role": "user", "content": "That was the last tool call: answer now."},
        ],
        "max_tokens": 99,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "search_documents",
                    "description": "Search the documents.",
                    "parameters": SEARCH.input_schema,
                },
            }
        ],
    }


def test_openai_request_marks_tool_errors_and_leaves_out_empty_tools() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "x", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": "No tool.",
                    "is_error": True,
                }
            ],
        },
    ]

    body = request_body(model="m", system="", messages=messages, tools=[], max_tokens=64)

    assert body["messages"] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Error: No tool."},
    ]
    assert "tools" not in body


def test_openai_posts_to_chat_completions_with_the_key_as_bearer() -> None:
    transport = Recorded("answer_turn.sse")

    _turn(_model(transport, api_key="sk-local"))

    request = transport.requests[0]
    assert str(request.url) == f"{BASE_URL}/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-local"


def test_openai_sends_no_authorization_without_a_key() -> None:
    transport = Recorded("answer_turn.sse")

    _turn(_model(transport))

    assert "authorization" not in transport.requests[0].headers


@pytest.mark.parametrize(
    ("fixture", "status", "error", "advice"),
    [
        ("unauthorized.json", 401, ModelAccessError, "DOCCHAT_OPENAI_API_KEY"),
        ("ollama_model_not_found.json", 404, ModelAccessError, "ollama pull qwen3:8b"),
        ("ollama_no_tools.json", 400, ModelAccessError, "supports tool calling"),
        ("llama_server_loading.json", 503, ModelUnavailableError, "try again shortly"),
    ],
)
def test_openai_error_statuses_say_what_to_do(
    fixture: str, status: int, error: type[ModelError], advice: str
) -> None:
    with pytest.raises(ModelError) as raised:
        _turn(_model(Recorded(fixture, status=status)))

    assert type(raised.value) is error
    message = str(raised.value)
    assert advice in message
    server_words = json.loads((FIXTURES / fixture).read_text())["error"]["message"]
    assert server_words in message


def test_openai_unreachable_server_is_unavailable_and_asks_if_it_runs() -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleModel(base_url=f"http://127.0.0.1:{port}/v1", model_id="qwen3:8b")

    with pytest.raises(ModelUnavailableError, match="is it running"):
        _turn(model)


def test_openai_stream_cut_off_before_finish_is_unavailable() -> None:
    with pytest.raises(ModelUnavailableError, match="ended before the turn did"):
        _turn(_model(Recorded("cut_off.sse")))


def test_openai_error_chunk_mid_stream_is_unavailable() -> None:
    model = _model(Recorded("error_mid_stream.sse"))
    events = model.stream(system="", messages=QUESTION, tools=[], max_tokens=64)

    assert next(events) == TextDelta("Tighten")
    with pytest.raises(ModelUnavailableError, match="the server is shutting down"):
        next(events)


def test_settings_openai_without_base_url_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="DOCCHAT_OPENAI_BASE_URL"):
        Settings.from_env({"DOCCHAT_MODEL_PROVIDER": "openai", "DOCCHAT_MODEL_ID": "qwen3:8b"})


def test_settings_openai_without_model_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="DOCCHAT_MODEL_ID"):
        Settings.from_env({"DOCCHAT_MODEL_PROVIDER": "openai", "DOCCHAT_OPENAI_BASE_URL": BASE_URL})


def test_settings_openai_base_url_must_be_http() -> None:
    with pytest.raises(ConfigError, match="must be an http"):
        Settings.from_env(
            {
                "DOCCHAT_MODEL_PROVIDER": "openai",
                "DOCCHAT_OPENAI_BASE_URL": "localhost:11434/v1",
                "DOCCHAT_MODEL_ID": "qwen3:8b",
            }
        )


def test_wiring_builds_the_openai_compatible_model() -> None:
    settings = Settings.from_env(
        {
            "DOCCHAT_MODEL_PROVIDER": "openai",
            "DOCCHAT_OPENAI_BASE_URL": BASE_URL + "/",
            "DOCCHAT_MODEL_ID": "llama3.1:8b",
        }
    )

    model = chat_model(settings)

    assert isinstance(model, OpenAICompatibleModel)
    assert model.model_id == "llama3.1:8b"


@pytest.mark.slow  # a fresh Python importing the chat Lambda's whole stack: 2.5 s
def test_chat_side_imports_the_openai_adapter_only_when_configured() -> None:
    # The chat Lambda imports the wiring, the API and Claude's adapter; the OpenAI-compatible
    # adapter stays unimported unless DOCCHAT_MODEL_PROVIDER=openai.
    probe = (
        "import sys, docchat.wiring.cloud, docchat.serve.app, docchat.answer.agent\n"
        "from docchat.config import Settings\n"
        "from docchat.wiring import chat_model\n"
        "chat_model(Settings(model_provider='anthropic', anthropic_api_key='k'))\n"
        "print('docchat.adapters.openai_model' in sys.modules)\n"
    )
    assert fresh_python(probe).strip() == "False"
