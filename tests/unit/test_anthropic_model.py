"""ClaudeModel on the real anthropic SDK, fed recorded Messages API streams by a mock transport.

The fixtures in tests/fixtures/anthropic are Server-Sent Events in the Messages API wire format
(platform.claude.com "Streaming Messages") and JSON error bodies ("Errors"). For Bedrock the same
events are re-framed as AWS event-stream `chunk` messages, the binary format InvokeModel-
WithResponseStream answers with, so the SDK's own Bedrock decoder runs too.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from docchat.adapters.anthropic_model import (
    ANTHROPIC_MODEL_ID,
    BEDROCK_ANTHROPIC_VERSION,
    BEDROCK_MODEL_ID,
    ClaudeModel,
    claude_model,
)
from docchat.errors import ConfigError, ModelAccessError, ModelError, ModelUnavailableError
from docchat.llm import (
    ModelEvent,
    TextDelta,
    ToolSpec,
    ToolUse,
    TurnEnd,
)
from docchat.ports import ChatModel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic"
MODEL = "claude-sonnet-4-6"
SYSTEM = "Answer from the documents only and cite them as [n]."
QUESTION = [{"role": "user", "content": "What torque for the M8 head bolts?"}]
SEARCH = ToolSpec(
    name="search_documents",
    description="Search the indexed PDFs.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)

Handler = Callable[[httpx2.Request], httpx2.Response]


pytestmark = pytest.mark.usefixtures("dummy_aws")


class Recorder:
    """A mock transport handler: records each request, answers with `respond(request)`."""

    def __init__(self, respond: Callable[[], httpx2.Response]) -> None:
        self.requests: list[httpx2.Request] = []
        self._respond = respond

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self._respond()

    @property
    def body(self) -> dict[str, Any]:
        (request,) = self.requests
        parsed: dict[str, Any] = json.loads(request.content)
        return parsed


def sse_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def sse_events(name: str) -> list[dict[str, Any]]:
    """The JSON payloads of a recorded SSE stream, in order."""
    return [
        json.loads(line.removeprefix("data: "))
        for line in (FIXTURES / name).read_text().splitlines()
        if line.startswith("data: ")
    ]


def sse_response(content: bytes | Iterator[bytes]) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content)


def error_response(status: int, fixture: str) -> httpx2.Response:
    body = json.loads((FIXTURES / fixture).read_text())
    return httpx2.Response(status, json=body)


def anthropic_client(handler: Handler) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test",
        base_url="http://testserver",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def bedrock_client(handler: Handler, *, region: str = "us-east-1") -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(
        aws_region=region,
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def replaying(content: bytes | Iterator[bytes], **model_args: Any) -> tuple[ClaudeModel, Recorder]:
    recorder = Recorder(lambda: sse_response(content))
    return ClaudeModel(client=anthropic_client(recorder), model_id=MODEL, **model_args), recorder


def turn(model: ChatModel, *, tools: list[ToolSpec] | None = None) -> list[ModelEvent]:
    return list(
        model.stream(system=SYSTEM, messages=QUESTION, tools=tools or [SEARCH], max_tokens=1024)
    )


def consume_until_error(model: ChatModel) -> tuple[list[ModelEvent], pytest.ExceptionInfo[Any]]:
    """The events yielded before the stream raised, and what it raised."""
    seen: list[ModelEvent] = []
    with pytest.raises(ModelError) as raised:
        for event in model.stream(system=SYSTEM, messages=QUESTION, tools=[], max_tokens=64):
            seen.append(event)
    return seen, raised


# --- AWS event-stream framing (the binary format of Bedrock's response streams) -------------


def event_stream_message(payload: bytes, headers: dict[str, str]) -> bytes:
    """One AWS event-stream message: prelude, string headers, payload, CRC32s."""
    encoded = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v)) + v.encode()
        for k, v in headers.items()
    )
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_chunk(event: dict[str, Any]) -> bytes:
    """A `chunk` event carrying one Messages API event as base64 JSON, as Bedrock sends it."""
    payload = json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode()})
    headers = {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return event_stream_message(payload.encode(), headers)


def bedrock_exception(kind: str, message: str) -> bytes:
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return event_stream_message(json.dumps({"message": message}).encode(), headers)


def bedrock_response(content: bytes) -> httpx2.Response:
    return httpx2.Response(
        200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=content
    )


# --- streamed turns ---------------------------------------------------------------------------


# What tool_use_turn.sse decodes to, whichever way it arrives.
TOOL_USE_TURN = [
    TextDelta("I'll search the manuals"),
    TextDelta(" for that."),
    ToolUse(
        id="toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        name="search_documents",
        input={"query": "torque for the M8 cylinder head bolts"},
    ),
    TurnEnd(stop_reason="tool_use", input_tokens=472, output_tokens=89),
]


def test_claude_model_streams_text_then_tool_use_then_turn_end() -> None:
    model, _ = replaying(sse_bytes("tool_use_turn.sse"))

    events = turn(model)

    assert events == TOOL_USE_TURN


def test_claude_model_sends_one_streaming_messages_request() -> None:
    model, recorder = replaying(sse_bytes("tool_use_turn.sse"))

    turn(model)

    (request,) = recorder.requests
    assert (request.method, request.url.path) == ("POST", "/v1/messages")
    assert request.headers["authorization"] == "Bearer test"
    assert recorder.body == {
        "model": MODEL,
        "max_tokens": 1024,
        "system": SYSTEM,
        "messages": QUESTION,
        "tools": [
            {
                "name": "search_documents",
                "description": "Search the indexed PDFs.",
                "input_schema": SEARCH.input_schema,
            }
        ],
        "stream": True,
    }


def test_claude_model_omits_empty_tools_and_system() -> None:
    model, recorder = replaying(sse_bytes("text_turn.sse"))

    list(model.stream(system="", messages=QUESTION, tools=[], max_tokens=256))

    assert "tools" not in recorder.body
    assert "system" not in recorder.body


def test_claude_model_sends_temperature_only_when_set() -> None:
    default, default_recorder = replaying(sse_bytes("text_turn.sse"))
    chosen, chosen_recorder = replaying(sse_bytes("text_turn.sse"), temperature=0.0)

    turn(default)
    turn(chosen)

    assert "temperature" not in default_recorder.body
    assert chosen_recorder.body["temperature"] == 0.0


def test_claude_model_streams_cited_text_turn() -> None:
    model, _ = replaying(sse_bytes("text_turn.sse"))

    events = turn(model)

    assert events == [
        TextDelta("Tighten the M8 cylinder head bolts"),
        TextDelta(" to 25 N·m in three passes [1]."),
        TextDelta(" Work from the centre outwards"),
        TextDelta(" and replace the gasket [2]."),
        TurnEnd(stop_reason="end_turn", input_tokens=1830, output_tokens=31),
    ]


def test_claude_model_yields_text_before_the_response_is_complete() -> None:
    # Given a response body that arrives one SSE event at a time
    chunks = [part + b"\n\n" for part in sse_bytes("text_turn.sse").split(b"\n\n") if part]
    pulled: list[int] = []

    def body() -> Iterator[bytes]:
        for number, chunk in enumerate(chunks):
            pulled.append(number)
            yield chunk

    model, _ = replaying(body())

    # When the first event is taken from the stream
    events = model.stream(system=SYSTEM, messages=QUESTION, tools=[], max_tokens=256)
    first = next(events)

    # Then it is the first text delta, and the transport has not delivered the rest yet
    assert first == TextDelta("Tighten the M8 cylinder head bolts")
    assert len(pulled) < len(chunks)
    assert list(events)[-1] == TurnEnd(stop_reason="end_turn", input_tokens=1830, output_tokens=31)
    assert len(pulled) == len(chunks)


# --- errors in the middle of a stream ---------------------------------------------------------


def test_claude_model_overloaded_mid_stream_raises_unavailable_after_text() -> None:
    model, _ = replaying(sse_bytes("overloaded_mid_stream.sse"))

    seen, raised = consume_until_error(model)

    assert seen == [TextDelta("Tighten the M8 bolts"), TextDelta(" to 25 N·m")]
    assert raised.type is ModelUnavailableError
    assert "Overloaded" in str(raised.value)
    assert "try again shortly" in str(raised.value)
    assert isinstance(raised.value.__cause__, anthropic.APIStatusError)


@pytest.mark.parametrize(
    ("error_type", "expected"),
    [
        ("rate_limit_error", ModelUnavailableError),
        ("api_error", ModelUnavailableError),
        ("permission_error", ModelAccessError),
        ("invalid_request_error", ModelError),
    ],
)
def test_claude_model_maps_mid_stream_error_events_by_type(
    error_type: str, expected: type[ModelError]
) -> None:
    body = sse_bytes("overloaded_mid_stream.sse").replace(b"overloaded_error", error_type.encode())
    model, _ = replaying(body)

    seen, raised = consume_until_error(model)

    assert len(seen) == 2
    assert raised.type is expected


def test_claude_model_broken_connection_mid_stream_raises_unavailable() -> None:
    head = sse_bytes("text_turn.sse").split(b"event: content_block_stop")[0]

    def body() -> Iterator[bytes]:
        yield head
        raise httpx2.ReadError("connection reset by peer")

    model, _ = replaying(body())

    seen, raised = consume_until_error(model)

    assert len(seen) == 4
    assert raised.type is ModelUnavailableError
    assert "broke mid-answer" in str(raised.value)
    # the transport's error is kept, whether the SDK wraps it (anthropic 2.x) or not
    causes = []
    cause: BaseException | None = raised.value
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    assert any(isinstance(c, httpx2.ReadError) for c in causes)


def test_claude_model_stream_ending_before_message_stop_raises_unavailable() -> None:
    cut = sse_bytes("text_turn.sse").split(b"event: message_delta")[0]
    model, _ = replaying(cut)

    seen, raised = consume_until_error(model)

    assert len(seen) == 4
    assert raised.type is ModelUnavailableError
    assert "ended before the turn did" in str(raised.value)


def test_claude_model_malformed_tool_input_raises_model_error() -> None:
    body = sse_bytes("tool_use_turn.sse").replace(b'\\"query\\": \\"torq', b'\\"query\\": oops')
    model, _ = replaying(body)

    seen, raised = consume_until_error(model)

    assert seen == [TextDelta("I'll search the manuals"), TextDelta(" for that.")]
    assert raised.type is ModelError
    assert "malformed stream" in str(raised.value)


# --- HTTP status errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "fixture", "expected"),
    [
        (401, "authentication_error.json", ModelAccessError),
        (403, "permission_error.json", ModelAccessError),
        (404, "not_found_error.json", ModelAccessError),
        (429, "rate_limit_error.json", ModelUnavailableError),
        (500, "api_error.json", ModelUnavailableError),
        (529, "overloaded_error.json", ModelUnavailableError),
        (400, "invalid_request_error.json", ModelError),
    ],
)
def test_claude_model_maps_http_errors(
    status: int, fixture: str, expected: type[ModelError]
) -> None:
    recorder = Recorder(lambda: error_response(status, fixture))
    model = ClaudeModel(client=anthropic_client(recorder), model_id=MODEL)

    with pytest.raises(ModelError) as raised:
        turn(model)

    assert raised.type is expected
    assert isinstance(raised.value.__cause__, anthropic.APIStatusError)
    assert raised.value.__cause__.status_code == status
    assert len(recorder.requests) == 1


def test_claude_model_access_error_names_model_and_key_to_set() -> None:
    recorder = Recorder(lambda: error_response(404, "not_found_error.json"))
    model = ClaudeModel(client=anthropic_client(recorder), model_id="claude-sonnet-9")

    with pytest.raises(ModelAccessError) as raised:
        turn(model)

    message = str(raised.value)
    assert "claude-sonnet-9" in message
    assert "model: claude-sonnet-9" in message
    assert "ANTHROPIC_API_KEY or DOCCHAT_ANTHROPIC_API_KEY" in message


def test_claude_model_spend_limit_is_an_access_error() -> None:
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "You have reached your specified workspace API usage limits.",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
    }
    recorder = Recorder(lambda: httpx2.Response(429, json=body))
    model = ClaudeModel(client=anthropic_client(recorder), model_id=MODEL)

    with pytest.raises(ModelAccessError, match="spend limit"):
        turn(model)


def test_claude_model_unreachable_service_raises_unavailable() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    model = ClaudeModel(client=anthropic_client(refuse), model_id=MODEL)

    with pytest.raises(ModelUnavailableError, match="try again shortly") as raised:
        turn(model)

    assert isinstance(raised.value.__cause__, anthropic.APIConnectionError)


def test_claude_model_rejects_an_empty_model_id() -> None:
    with pytest.raises(ConfigError, match="model id is empty"):
        ClaudeModel(client=anthropic_client(Recorder(lambda: sse_response(b""))), model_id=" ")


# --- the factory ------------------------------------------------------------------------------


def test_claude_model_factory_needs_an_api_key_for_anthropic() -> None:
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY or DOCCHAT_ANTHROPIC_API_KEY"):
        claude_model(provider="anthropic", model_id=ANTHROPIC_MODEL_ID, api_key=None)


def test_claude_model_factory_names_the_allowed_providers() -> None:
    with pytest.raises(ConfigError, match=r"'openai'.*bedrock, anthropic"):
        claude_model(provider="openai", model_id=ANTHROPIC_MODEL_ID)


def test_claude_model_factory_builds_an_anthropic_api_client() -> None:
    recorder = Recorder(lambda: sse_response(sse_bytes("text_turn.sse")))
    http_client = httpx2.Client(transport=httpx2.MockTransport(recorder))

    model = claude_model(provider="anthropic", api_key="sk-test", http_client=http_client)
    events = turn(model)

    (request,) = recorder.requests
    assert model.model_id == ANTHROPIC_MODEL_ID
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert recorder.body["model"] == "claude-sonnet-4-6"
    assert "anthropic_version" not in recorder.body
    assert events[-1] == TurnEnd(stop_reason="end_turn", input_tokens=1830, output_tokens=31)


def test_claude_model_factory_bedrock_signs_an_invoke_with_response_stream_request() -> None:
    # Given the default Bedrock model, answered with the recorded turn as event-stream chunks
    frames = b"".join(bedrock_chunk(event) for event in sse_events("tool_use_turn.sse"))
    recorder = Recorder(lambda: bedrock_response(frames))
    http_client = httpx2.Client(transport=httpx2.MockTransport(recorder))
    model = claude_model(provider="bedrock", region="us-west-2", http_client=http_client)

    # When it streams a turn
    events = turn(model)

    # Then the SDK posted a SigV4-signed InvokeModelWithResponseStream request ...
    (request,) = recorder.requests
    assert model.model_id == BEDROCK_MODEL_ID
    assert str(request.url) == (
        "https://bedrock-runtime.us-west-2.amazonaws.com"
        "/model/global.anthropic.claude-sonnet-4-6/invoke-with-response-stream"
    )
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/us-west-2/bedrock/aws4_request" in request.headers["authorization"]
    # ... whose body has the model in the path, not the body, and Bedrock's anthropic_version
    assert recorder.body == {
        "anthropic_version": BEDROCK_ANTHROPIC_VERSION,
        "max_tokens": 1024,
        "system": SYSTEM,
        "messages": QUESTION,
        "tools": [
            {
                "name": "search_documents",
                "description": "Search the indexed PDFs.",
                "input_schema": SEARCH.input_schema,
            }
        ],
    }
    # ... and the decoded events are the same as over the Anthropic API
    assert events == TOOL_USE_TURN


def test_claude_model_bedrock_sends_temperature_without_top_p() -> None:
    # Claude 4.x and newer refuse top_p together with temperature (400)
    frames = b"".join(bedrock_chunk(event) for event in sse_events("text_turn.sse"))
    recorder = Recorder(lambda: bedrock_response(frames))
    model = ClaudeModel(client=bedrock_client(recorder), model_id=BEDROCK_MODEL_ID, temperature=0.2)

    turn(model)

    assert recorder.body["temperature"] == 0.2
    assert recorder.body["anthropic_version"] == BEDROCK_ANTHROPIC_VERSION
    assert not {"top_p", "top_k"} & set(recorder.body)


def test_claude_model_bedrock_throttling_mid_stream_raises_unavailable() -> None:
    events = sse_events("overloaded_mid_stream.sse")[:-1]
    frames = b"".join(bedrock_chunk(event) for event in events)
    frames += bedrock_exception("throttlingException", "Too many tokens, please wait.")
    recorder = Recorder(lambda: bedrock_response(frames))
    model = ClaudeModel(client=bedrock_client(recorder), model_id=BEDROCK_MODEL_ID)

    seen, raised = consume_until_error(model)

    assert seen == [TextDelta("Tighten the M8 bolts"), TextDelta(" to 25 N·m")]
    assert raised.type is ModelUnavailableError
    assert "Too many tokens" in str(raised.value)


def test_claude_model_bedrock_access_denied_names_model_and_region() -> None:
    body = json.loads((FIXTURES / "bedrock_access_denied.json").read_text())
    headers = {"x-amzn-ErrorType": "AccessDeniedException:http://internal.amazon.com/coral/"}
    recorder = Recorder(lambda: httpx2.Response(403, headers=headers, json=body))
    model = ClaudeModel(client=bedrock_client(recorder, region="eu-central-1"), model_id="x.y")

    with pytest.raises(ModelAccessError) as raised:
        turn(model)

    message = str(raised.value)
    assert "x.y" in message
    assert "eu-central-1" in message
    assert "You don't have access to the model" in message
    assert "aws-marketplace:Subscribe" in message
    assert "use-case form" in message
    assert "Model access" not in message  # that console page no longer exists


def test_claude_model_bedrock_invalid_model_id_is_an_access_error() -> None:
    body = {"message": "The provided model identifier is invalid."}
    recorder = Recorder(lambda: httpx2.Response(400, json=body))
    model = ClaudeModel(client=bedrock_client(recorder), model_id="anthropic.claude-nope")

    with pytest.raises(ModelAccessError, match=r"anthropic\.claude-nope"):
        turn(model)


def test_claude_model_bedrock_without_aws_credentials_raises_access_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    recorder = Recorder(lambda: bedrock_response(b""))
    # A region no other test uses: the SDK caches one boto3 session per region.
    model = ClaudeModel(client=bedrock_client(recorder, region="ap-southeast-4"), model_id="x.y")

    with pytest.raises(ModelAccessError, match="no AWS credentials"):
        turn(model)

    assert recorder.requests == []


def test_claude_model_factory_bedrock_without_a_region_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="no AWS region"):
        claude_model(provider="bedrock", model_id=BEDROCK_MODEL_ID, region=None)
