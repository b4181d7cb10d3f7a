"""The OpenAI-compatible face of the chat: requests in OpenAI's shape, chat events out as
chat completions (streamed chunks or one whole completion) and the model list.

Shapes: https://platform.openai.com/docs/api-reference/chat (create, the chunk object, the
completion object) and https://platform.openai.com/docs/api-reference/models/list. docchat adds
`citations` to the completion and to the last chunk.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from docchat.answer.events import (
    ChatEvent,
    CitationsEvent,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    event_data,
)
from docchat.limits import MAX_DOC_IDS, MAX_MESSAGES
from docchat.llm import Message
from docchat.models import Citation

MODEL_NAME = "docchat"
MODEL_CREATED = 1_767_225_600  # 2026-01-01T00:00:00Z; the model list needs a creation time


class OpenAIMessage(BaseModel):
    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return " ".join(
            str(p.get("text", "")) for p in self.content or [] if p.get("type") == "text"
        )


class CompletionRequest(BaseModel):
    model: str = MODEL_NAME
    messages: list[OpenAIMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    doc_ids: list[str] | None = Field(None, max_length=MAX_DOC_IDS)

    def conversation(self) -> list[Message]:
        """The user's and the assistant's turns as the agent takes them; system prompts and
        tool turns are not docchat's to follow. Refuses (422) a conversation that does not end
        with a question."""
        said = [m for m in self.messages if m.role in ("user", "assistant")]
        if said and said[-1].role == "user" and not said[-1].text().strip():
            raise HTTPException(422, "invalid request: the question is only white space")
        messages: list[Message] = [
            {"role": "user" if m.role == "user" else "assistant", "content": m.text()}
            for m in said
            if m.text().strip()
        ]
        if not messages or messages[-1]["role"] != "user":
            raise HTTPException(422, "invalid request: the last message must be the user's")
        return messages


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


class CompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    citations: list[Citation] | None = None  # docchat's: on the last chunk only

    def sse(self) -> str:
        unset = {"citations"} if self.citations is None else None
        body = self.model_dump(mode="json", exclude=unset)
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class CompletionChoice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Completion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: CompletionUsage
    citations: list[Citation]


def completion_chunks(events: Iterator[ChatEvent], model: str) -> Iterator[str]:
    """The events as OpenAI's streamed chunks (SSE `data:` lines), ending with `[DONE]`, or
    with an `error` object if the answer failed."""
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())

    def chunk(
        delta: dict[str, str],
        finish: Literal["stop"] | None = None,
        citations: list[Citation] | None = None,
    ) -> str:
        choice = ChunkChoice(delta=delta, finish_reason=finish)
        return CompletionChunk(
            id=completion_id, created=created, model=model, choices=[choice], citations=citations
        ).sse()

    yield chunk({"role": "assistant", "content": ""})
    citations: list[Citation] = []
    for event in events:
        match event:
            case DeltaEvent(text=text):
                yield chunk({"content": text})
            case CitationsEvent():
                citations = event.citations
            case ErrorEvent():
                yield f"data: {json.dumps({'error': event_data(event)})}\n\n"
                return
    yield chunk({}, "stop", citations)
    yield "data: [DONE]\n\n"


def completion(events: Iterator[ChatEvent], model: str) -> Completion:
    """The events as one OpenAI chat completion; a failed answer is a 502."""
    text: list[str] = []
    citations: list[Citation] = []
    prompt = produced = 0
    for event in events:
        match event:
            case DeltaEvent():
                text.append(event.text)
            case CitationsEvent():
                citations = event.citations
            case DoneEvent(usage=usage):
                prompt, produced = usage.input_tokens, usage.output_tokens
            case ErrorEvent():
                raise HTTPException(502, f"the model failed: {event.message}")
    return Completion(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        model=model,
        choices=[CompletionChoice(message=AssistantMessage(content="".join(text)))],
        usage=CompletionUsage(
            prompt_tokens=prompt, completion_tokens=produced, total_tokens=prompt + produced
        ),
        citations=citations,
    )
