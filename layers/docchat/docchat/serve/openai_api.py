"""The OpenAI-compatible face of the chat: requests in OpenAI's shape, chat events out as
chat completions (streamed chunks or one whole completion) and the model list.

Shapes: https://platform.openai.com/docs/api-reference/chat (create, the chunk object, the
completion object) and https://platform.openai.com/docs/api-reference/models (list, retrieve).
docchat adds `citations` to the completion and to the last chunk, and `doc_ids` and `scope`
(collections and documents to answer from) to the request.

What docchat does not support is refused as OpenAI refuses it (400 in OpenAI's error shape,
docchat.serve.errors): a value out of OpenAI's range (`temperature: 5`) or one docchat does not
offer (`n: 3`, `tools`, `logprobs`, a `response_format` other than text), and a `model` other
than "docchat" is a 404 (`model_not_found`), as OpenAI answers a model it does not have.
Sampling settings and `max_tokens` in range are accepted and not applied (their descriptions
say so): the server's own settings write the answer. Messages have the limits of /chat
(docchat.limits).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from docchat.answer.events import (
    ChatEvent,
    CitationsEvent,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    collected,
    event_data,
)
from docchat.limits import MAX_DOC_IDS, MAX_MESSAGE_CHARS, MAX_MESSAGES, MAX_TOTAL_CHARS
from docchat.llm import Message
from docchat.models import Citation, Scope
from docchat.serve.schema import NOT_BLANK, WHOLE

MODEL_NAME = "docchat"
MODEL_CREATED = 1_767_225_600  # 2026-01-01T00:00:00Z; the model list needs a creation time


def _unsupported(name: str, value: object, supported: str) -> PydanticCustomError:
    return PydanticCustomError(
        "unsupported_value",
        "Unsupported value: '{name}' does not support {value} with docchat. Supported: "
        "{supported}.",
        {"name": name, "value": json.dumps(value), "supported": supported},
    )


class ContentPart(BaseModel):
    """One part of a message's content; docchat reads the text parts."""

    model_config = ConfigDict(strict=True, extra="allow")

    type: str
    text: str | None = None


# A user's message says something: text, or a text part, that is not only white space.
SAYS_SOMETHING: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": NOT_BLANK},
        {
            "type": "array",
            "contains": {
                "type": "object",
                "properties": {
                    "type": {"const": "text"},
                    "text": {"type": "string", "pattern": NOT_BLANK},
                },
                "required": ["type", "text"],
            },
        },
    ]
}


class OpenAIMessage(BaseModel):
    model_config = ConfigDict(
        strict=True,
        json_schema_extra={
            "anyOf": [
                {"properties": {"role": {"not": {"const": "user"}}}},
                {"properties": {"content": SAYS_SOMETHING}, "required": ["content"]},
            ]
        },
    )

    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | list[ContentPart] | None = Field(
        None, json_schema_extra={"maxLength": MAX_MESSAGE_CHARS}
    )

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return " ".join(p.text for p in self.content or [] if p.type == "text" and p.text)

    @model_validator(mode="after")
    def _fits(self) -> OpenAIMessage:
        text = self.text()
        if len(text) > MAX_MESSAGE_CHARS:
            raise ValueError(f"a message may hold at most {MAX_MESSAGE_CHARS} characters")
        if self.role == "user" and not text.strip():
            raise ValueError("the user's message is only white space")
        return self


# A conversation holds a question: a message of the user's.
ASKED: dict[str, Any] = {"properties": {"role": {"const": "user"}}, "required": ["role"]}


class StreamOptions(BaseModel):
    model_config = ConfigDict(strict=True)

    include_usage: bool = False


class ResponseFormat(BaseModel):
    """OpenAI's response_format: docchat writes text (with citations), never JSON."""

    model_config = ConfigDict(strict=True, extra="allow")

    type: str = Field(json_schema_extra={"enum": ["text"]})


class CompletionRequest(BaseModel):
    """A chat completion request as far as docchat follows it (see the module's docstring)."""

    # stream_options only with stream, as OpenAI has it.
    model_config = ConfigDict(
        strict=True,
        json_schema_extra={
            "anyOf": [
                {"properties": {"stream": {"const": True}}, "required": ["stream"]},
                {"properties": {"stream_options": {"type": "null"}}},
            ]
        },
    )

    model: str = Field(
        MODEL_NAME,
        description=f"'{MODEL_NAME}', the one model GET /v1/models lists; any other is a 404",
    )
    messages: list[OpenAIMessage] = Field(
        min_length=1,
        max_length=MAX_MESSAGES,
        json_schema_extra={"contains": ASKED},
    )
    stream: bool = False
    stream_options: StreamOptions | None = None
    doc_ids: list[str] | None = Field(None, max_length=MAX_DOC_IDS)
    scope: Scope | None = Field(
        None,
        description="docchat's: the collections (and documents) to answer from; by default "
        "every collection you may read",
    )
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    max_tokens: Annotated[int, Field(ge=1), WHOLE] | None = Field(
        None, description="accepted and not applied: the server's settings bound an answer"
    )
    max_completion_tokens: Annotated[int, Field(ge=1), WHOLE] | None = Field(
        None, description="accepted and not applied: the server's settings bound an answer"
    )
    response_format: ResponseFormat | None = Field(
        None, description='only {"type": "text"}: docchat answers in prose, never JSON'
    )
    n: Annotated[int, Field(ge=1, le=1), WHOLE] | None = Field(
        None, description="docchat writes one choice"
    )
    logprobs: bool | None = Field(None, json_schema_extra={"enum": [False, None]})
    tools: list[dict[str, Any]] | None = Field(
        None, max_length=0, description="docchat's model calls docchat's own tools only"
    )

    @field_validator("n", mode="before")
    @classmethod
    def _one_choice(cls, n: object) -> object:
        if isinstance(n, (int, float)) and not isinstance(n, bool) and n > 1:
            raise _unsupported("n", n, "1 (docchat writes one choice)")
        return n

    @field_validator("logprobs", mode="before")
    @classmethod
    def _no_logprobs(cls, logprobs: object) -> object:
        if logprobs is True:
            raise _unsupported("logprobs", logprobs, "false")
        return logprobs

    @field_validator("response_format", mode="before")
    @classmethod
    def _text_only(cls, response_format: object) -> object:
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind not in (None, "text"):
            raise _unsupported("response_format", kind, "'text' (docchat answers in prose)")
        return response_format

    @field_validator("tools", mode="before")
    @classmethod
    def _no_tools(cls, tools: object) -> object:
        if isinstance(tools, list) and tools:
            raise _unsupported("tools", "[...]", "none (docchat's model uses docchat's tools)")
        return tools

    @model_validator(mode="after")
    def _fits(self) -> CompletionRequest:
        if self.stream_options is not None and not self.stream:
            raise PydanticCustomError(
                "invalid_value",
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            )
        if sum(len(m.text()) for m in self.messages) > MAX_TOTAL_CHARS:
            raise ValueError(f"the conversation is longer than {MAX_TOTAL_CHARS} characters")
        if all(m.role != "user" for m in self.messages):
            raise ValueError("there is no question: the last message must be the user's question")
        return self

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage

    def conversation(self) -> list[Message]:
        """The user's and the assistant's turns up to the question (the last user message), as
        the agent takes them; system prompts and tool turns are not docchat's to follow, and an
        answer after the question is one asked for again."""
        last = max(n for n, m in enumerate(self.messages) if m.role == "user")
        return [
            {"role": "user" if m.role == "user" else "assistant", "content": m.text()}
            for m in self.messages[: last + 1]
            if m.role in ("user", "assistant") and m.text().strip()
        ]


class ModelCard(BaseModel):
    id: str = MODEL_NAME
    object: Literal["model"] = "model"
    created: int = MODEL_CREATED
    owned_by: str = "docchat"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard] = Field(default_factory=lambda: [ModelCard()])


class ChunkChoice(BaseModel):
    index: int = 0
    delta: dict[str, str]
    finish_reason: Literal["stop"] | None = None


class PromptTokensDetails(BaseModel):
    cached_tokens: int = 0


class CompletionUsage(BaseModel):
    """OpenAI's usage object (its SDK's `CompletionUsage`), with docchat's `cost_usd`: the
    answer's cost at list prices (answer/prices.py), null when no price names the model."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails = PromptTokensDetails()
    cost_usd: float | None = 0.0

    @classmethod
    def of(cls, done: DoneEvent) -> CompletionUsage:
        usage = done.usage
        prompt, produced = usage.input_tokens, usage.output_tokens
        return cls(
            prompt_tokens=prompt,
            completion_tokens=produced,
            total_tokens=prompt + produced,
            prompt_tokens_details=PromptTokensDetails(cached_tokens=usage.cache_read_tokens),
            cost_usd=usage.cost_usd,
        )


class CompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    citations: list[Citation] | None = None  # docchat's: on the last chunk only
    usage: CompletionUsage | None = None  # with stream_options.include_usage: null but last

    def sse(self, *, with_usage: bool = False) -> str:
        unset = {"citations"} if self.citations is None else set()
        if not with_usage:
            unset.add("usage")
        body = self.model_dump(mode="json", exclude=unset)
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class CompletionChoice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class Completion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: CompletionUsage
    citations: list[Citation]


def completion_chunks(
    events: Iterator[ChatEvent], model: str, *, include_usage: bool = False
) -> Iterator[str]:
    """The events as OpenAI's streamed chunks (SSE `data:` lines), ending with `[DONE]`, or
    with an `error` object if the answer failed. With `include_usage`, every chunk has a
    `usage` field, null but on a last chunk (no choices) that holds the answer's usage."""
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())

    def chunk(
        choices: list[ChunkChoice],
        citations: list[Citation] | None = None,
        usage: CompletionUsage | None = None,
    ) -> str:
        return CompletionChunk(
            id=completion_id,
            created=created,
            model=model,
            choices=choices,
            citations=citations,
            usage=usage,
        ).sse(with_usage=include_usage)

    yield chunk([ChunkChoice(delta={"role": "assistant", "content": ""})])
    citations: list[Citation] = []
    usage: CompletionUsage | None = None
    for event in events:
        match event:
            case DeltaEvent(text=text):
                yield chunk([ChunkChoice(delta={"content": text})])
            case CitationsEvent():
                citations = event.citations
            case DoneEvent():
                usage = CompletionUsage.of(event)
            case ErrorEvent():
                yield f"data: {json.dumps({'error': event_data(event)})}\n\n"
                return
    yield chunk([ChunkChoice(delta={}, finish_reason="stop")], citations)
    if include_usage and usage is not None:
        yield chunk([], usage=usage)
    yield "data: [DONE]\n\n"


def completion(events: Iterator[ChatEvent], model: str) -> Completion:
    """The events as one OpenAI chat completion; a failed answer raises its error again (the
    class its code names), whose status the API answers with."""
    told = collected(events, said=lambda message: f"the answer failed: {message}")
    usage = (
        CompletionUsage.of(told.done)
        if told.done
        else CompletionUsage(prompt_tokens=0, completion_tokens=0, total_tokens=0)
    )
    return Completion(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        model=model,
        choices=[CompletionChoice(message=AssistantMessage(content=told.text))],
        usage=usage,
        citations=told.citations,
    )
