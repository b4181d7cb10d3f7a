"""Any model behind an OpenAI-compatible Chat Completions endpoint: Ollama, llama.cpp's
`llama-server`, vLLM, LM Studio (or OpenAI itself), over plain HTTP with httpx2.

`OpenAICompatibleModel` translates the agent's Anthropic-shaped messages (docchat.llm) into
Chat Completions messages, streams the answer (`stream: true`), yields each `delta.content` as a
`TextDelta`, puts each tool call back together from its streamed fragments, and ends with
`TurnEnd`. Shapes: https://platform.openai.com/docs/api-reference/chat/create (request, tools,
`role: tool` messages) and https://platform.openai.com/docs/api-reference/chat-streaming (the
chunk object: `choices[].delta.content`, `delta.tool_calls[]` with `index`, `id`,
`function.name`, `function.arguments` pieces; `finish_reason`; `usage` in a last chunk with no
choices when `stream_options.include_usage` is set).

Why not the openai SDK: the chat function ships httpx2 already (anthropic depends on it), and
what this needs from the wire is one POST and a few lines of server-sent events; the SDK would
add a package to the chat function for that, and its error classes are worded for OpenAI's
service, not for a local server that is not running.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from docchat.errors import ConfigError, ModelAccessError, ModelError, ModelUnavailableError
from docchat.llm import Message, ModelEvent, TextDelta, ToolSpec, ToolUse, TurnEnd

logger = logging.getLogger(__name__)

# Chat Completions' finish reasons as the Messages API names its stop reasons.
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
UNAVAILABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
ACCESS_STATUSES = frozenset({401, 403})


class OpenAICompatibleModel:
    """A `ChatModel` backed by an OpenAI-compatible server: one streamed request per turn."""

    def __init__(
        self,
        *,
        base_url: str,
        model_id: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        http_client: httpx2.Client | None = None,
    ) -> None:
        if not base_url.strip():
            raise ConfigError(
                "the OpenAI-compatible provider needs DOCCHAT_OPENAI_BASE_URL, "
                "e.g. http://localhost:11434/v1 for Ollama"
            )
        if not model_id.strip():
            raise ConfigError(
                "the OpenAI-compatible provider needs DOCCHAT_MODEL_ID: the model name the "
                "server knows, e.g. qwen3:8b for Ollama"
            )
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._base_url = base_url.rstrip("/")
        self._model_id = model_id
        self._headers = {"Accept": "text/event-stream"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        # Connecting to a local server is quick or fails; the first token can wait for the
        # server to load the model's weights.
        self._client = http_client or httpx2.Client(timeout=httpx2.Timeout(timeout, connect=10.0))

    @property
    def model_id(self) -> str:
        return self._model_id

    def stream(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> Iterator[ModelEvent]:
        """Text deltas as the model writes them, then its tool calls, then `TurnEnd`."""
        body = request_body(
            model=self._model_id,
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=max_tokens,
        )
        turn = _Turn()
        try:
            with self._client.stream("POST", self._url, json=body, headers=self._headers) as reply:
                if reply.status_code != 200:
                    reply.read()
                    raise self._status_error(reply.status_code, error_detail(reply))
                for chunk in sse_chunks(reply.iter_lines()):
                    self._check_chunk_error(chunk)
                    yield from turn.add(chunk)
        except httpx2.ConnectError as exc:
            raise ModelUnavailableError(
                f"cannot reach the model server at {self._base_url} ({exc}): is it running "
                "(e.g. `ollama serve`), and is DOCCHAT_OPENAI_BASE_URL its address with /v1?"
            ) from exc
        except httpx2.TimeoutException as exc:
            raise ModelUnavailableError(
                f"the model server at {self._base_url} did not answer in time ({exc!r}): it may "
                "still be loading the model; try again shortly"
            ) from exc
        except httpx2.TransportError as exc:
            raise ModelUnavailableError(
                f"the connection to the model server at {self._base_url} broke mid-answer "
                f"({exc!r}): try again shortly"
            ) from exc
        yield from turn.closing_events(self._model_id)

    def _status_error(self, status: int, what: str) -> ModelError:
        """The docchat error for an HTTP error status, saying whether to wait or reconfigure."""
        where = f"the model server at {self._base_url}"
        if status in ACCESS_STATUSES:
            return ModelAccessError(
                f"{where} refused the request ({status}: {what}): set DOCCHAT_OPENAI_API_KEY to "
                "a key it accepts"
            )
        if status == 404:
            return ModelAccessError(
                f"{where} knows no model {self._model_id!r} or no /chat/completions route "
                f"(404: {what}): set DOCCHAT_MODEL_ID to a model it serves (Ollama: `ollama pull "
                f"{self._model_id}`) and DOCCHAT_OPENAI_BASE_URL to its API root, usually "
                "ending in /v1"
            )
        if status in UNAVAILABLE_STATUSES:
            return ModelUnavailableError(
                f"{where} is busy or failing ({status}: {what}): try again shortly"
            )
        if "tool" in what.lower():
            return ModelAccessError(
                f"model {self._model_id!r} at {self._base_url} refused the tools ({status}: "
                f"{what}): choose a model that supports tool calling (e.g. qwen3 or llama3.1 on "
                "Ollama); start llama.cpp's llama-server with --jinja"
            )
        return ModelError(f"{where} refused the request ({status}: {what})")

    def _check_chunk_error(self, chunk: dict[str, Any]) -> None:
        """Servers report a failure after the stream began as a chunk with `error`."""
        if "error" not in chunk:
            return
        what = _message_of(chunk)
        raise ModelUnavailableError(
            f"the model server at {self._base_url} failed mid-answer ({what}): try again shortly"
        )


@dataclass
class _ToolCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


THINK, THOUGHT = "<think>", "</think>"


@dataclass
class _Turn:
    """What the chunks of one streamed turn add up to."""

    calls: dict[int, _ToolCall] = field(default_factory=dict)
    finish_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    # A thinking model (Qwen3 through Ollama or llama.cpp) may write its reasoning inline,
    # `<think>…</think>` before the answer: text is held while it may still be that.
    held: str = ""
    thinking: bool = False
    answering: bool = False

    def _shown(self, text: str) -> str:
        """What of `text` is the answer: not reasoning at the start of the turn."""
        if self.answering:
            return text
        self.held += text
        while True:
            if self.thinking:
                end = self.held.find(THOUGHT)
                if end < 0:
                    self.held = self.held[-(len(THOUGHT) - 1) :]  # may begin the closing tag
                    return ""
                self.held, self.thinking = self.held[end + len(THOUGHT) :], False
                continue
            start = self.held.lstrip()
            if not start or (len(start) < len(THINK) and THINK.startswith(start)):
                self.held = start  # blank so far, or perhaps the start of the tag
                return ""
            if start.startswith(THINK):
                self.held, self.thinking = start[len(THINK) :], True
                continue
            self.held, self.answering = "", True
            return start

    def add(self, chunk: dict[str, Any]) -> Iterator[TextDelta]:
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.input_tokens = int(usage.get("prompt_tokens") or 0)
            self.output_tokens = int(usage.get("completion_tokens") or 0)
            # Of the prompt's tokens, those read from the server's prompt cache (OpenAI's
            # `prompt_tokens_details.cached_tokens`; servers that cache nothing omit it).
            details = usage.get("prompt_tokens_details")
            if isinstance(details, dict):
                self.cached_tokens = int(details.get("cached_tokens") or 0)
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str) and text and (shown := self._shown(text)):
                yield TextDelta(shown)
            for piece in delta.get("tool_calls") or []:
                self._add_tool_call(piece)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def _add_tool_call(self, piece: dict[str, Any]) -> None:
        # The first fragment of a call carries its id and name; later ones with the same
        # `index` carry pieces of the arguments string. Ollama sends the whole call at once.
        call = self.calls.setdefault(int(piece.get("index", len(self.calls))), _ToolCall())
        call.id = call.id or str(piece.get("id") or "")
        function = piece.get("function") or {}
        call.name = call.name or str(function.get("name") or "")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a server that sends the object, not its JSON text
            arguments = json.dumps(arguments)
        if isinstance(arguments, str):
            call.arguments.append(arguments)

    def closing_events(self, model_id: str) -> Iterator[ModelEvent]:
        """The tool calls and `TurnEnd`; a stream that stopped before the turn did is an error."""
        if self.finish_reason is None:
            raise ModelUnavailableError(
                f"the answer from model {model_id} ended before the turn did: try again shortly"
            )
        if self.held and not self.thinking:
            yield TextDelta(self.held)  # a short answer that only began like the tag
            self.held = ""
        for number, (index, call) in enumerate(sorted(self.calls.items()), start=1):
            yield ToolUse(
                id=call.id or f"call_{index}_{number}",
                name=call.name,
                input=tool_input(call.name, "".join(call.arguments)),
            )
        stop = "tool_use" if self.calls else STOP_REASONS.get(self.finish_reason, "end_turn")
        yield TurnEnd(
            stop_reason=stop,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cached_tokens,
        )


def tool_input(name: str, arguments: str) -> dict[str, Any]:
    """A tool call's input from its JSON arguments. Arguments that are not a JSON object give
    `{}`: the agent's validation then tells the model which fields its call lacks, so it can
    call again, as with any other wrong input."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        logger.warning("the model's arguments for %s are not JSON", name)
        return {}
    if not isinstance(value, dict):
        logger.warning("the model's arguments for %s are not a JSON object", name)
        return {}
    return value


def sse_chunks(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON chunks of a server-sent event stream, up to `data: [DONE]`. Comment lines
    (`: ping`), `event:` lines and blank lines carry no chunk."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            return
        if not data:
            continue
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ModelError(f"the model server sent a malformed chunk ({exc}): try again") from exc
        if isinstance(chunk, dict):
            yield chunk


def request_body(
    *,
    model: str,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    max_tokens: int,
) -> dict[str, Any]:
    """The Chat Completions request for one turn."""
    translated: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        translated.extend(chat_messages(message))
    body: dict[str, Any] = {
        "model": model,
        "messages": translated,
        "max_tokens": max_tokens,
        "stream": True,
        # Usage arrives in a last chunk; servers that do not know the option ignore it.
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in tools
        ]
    return body


def chat_messages(message: Message) -> list[dict[str, Any]]:
    """One Anthropic-shaped message as Chat Completions messages: an assistant turn with its
    `tool_calls`; a user turn's tool results as `role: tool` messages, then its text."""
    role = message["role"]
    content = message["content"]
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for block in content:
        if block["type"] == "text":
            texts.append(block["text"])
        elif block["type"] == "tool_use":
            calls.append(
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {"name": block["name"], "arguments": json.dumps(block["input"])},
                }
            )
        else:
            results.append(
                {
                    "role": "tool",
                    "tool_call_id": block["tool_use_id"],
                    "content": ("Error: " if block.get("is_error") else "") + block["content"],
                }
            )
    text = "".join(texts)
    if role == "assistant":
        turn: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            turn["tool_calls"] = calls
        return [turn]
    # Tool results must follow the assistant turn that asked for them, before any user text.
    return [*results, {"role": "user", "content": text}] if text else results


def error_detail(reply: httpx2.Response) -> str:
    """The server's own words for an error: `error.message` (OpenAI, Ollama, llama.cpp),
    `message` (vLLM's older shape), a bare `error` string, or the start of the body."""
    try:
        body = reply.json()
    except ValueError:
        return reply.text.strip()[:300] or reply.reason_phrase
    return _message_of(body) if isinstance(body, dict) else str(body)[:300]


def _message_of(body: dict[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str) and error:
        return error
    if body.get("message"):
        return str(body["message"])
    return json.dumps(body)[:300]
