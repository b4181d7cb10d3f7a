"""The chat stream's events: one frozen model per event, and their Server-Sent Events encoding.

The agent yields these; `/chat` sends each as `event: <type>` with the other fields as JSON
`data`; the OpenAI-compatible API (`serve/openai_api.py`), the CLI and the page read them. In
order: `status`, per tool call `tool_call` (and `sources`), `delta`, `citations`, then `done` or
`error`. The page's `app.js` reads these fields by name: tests/unit/test_events.py and
tests/web/test_page_events.py fail when the two drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from docchat.errors import REGISTRY, DocchatError
from docchat.models import Citation

AnswerMode = Literal["model", "extractive"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StatusEvent(_Frozen):
    """The answer started (`mode` says how it is written), or is waiting for the index."""

    type: Literal["status"] = "status"
    stage: Literal["started", "waking_index"]
    mode: AnswerMode | None = None
    message: str | None = None

    @model_serializer(mode="wrap")
    def _only_what_the_stage_has(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # `started` carries a mode, `waking_index` a message; neither sends the other as null.
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if v is not None}


class ToolCallEvent(_Frozen):
    """The model called a tool, with the input it gave (as given: it may be invalid)."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    input: dict[str, Any]


class SourcePassage(_Frozen):
    """A numbered passage a tool returned; the model cites it by `number`."""

    number: int
    chunk_id: str
    doc_id: str
    title: str
    source: str = Field(description="the document's name, never a path on the server")
    page_start: int
    page_end: int
    headings: list[str]
    text: str


class RankedPassage(SourcePassage):
    """A passage a search found, with its fused score and its rank in each search."""

    score: float
    vector_rank: int | None
    keyword_rank: int | None


class SourcesEvent(_Frozen):
    """What a search (ranked passages) or a page read (plain passages) returned."""

    type: Literal["sources"] = "sources"
    query: str
    reranked: bool
    rerank_note: str
    passages: list[RankedPassage | SourcePassage]


class DeltaEvent(_Frozen):
    """A piece of the answer's text."""

    type: Literal["delta"] = "delta"
    text: str


class CitationsEvent(_Frozen):
    """The passages the answer cites, each with the page and the quoted span."""

    type: Literal["citations"] = "citations"
    citations: list[Citation]


class Usage(_Frozen):
    """The tokens an answer's model calls used (`input_tokens` counts those read from and
    written to a prompt cache too), and what they cost in US dollars at the list prices of
    answer/prices.py: 0 for an answer no model wrote, None for a model no price names."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # The reranker's billed queries (Bedrock's search units), in `cost_usd` when priced.
    rerank_search_units: int = 0
    cost_usd: float | None = None


class Timings(_Frozen):
    """Milliseconds: the whole answer, the searches in it, and until its first text."""

    total_ms: float
    retrieval_ms: float
    first_token_ms: float | None


class DoneEvent(_Frozen):
    type: Literal["done"] = "done"
    mode: AnswerMode
    usage: Usage
    timings: Timings


class ErrorEvent(_Frozen):
    """The answer failed; `code` is a `DocchatError` code (or `internal`)."""

    type: Literal["error"] = "error"
    code: str
    message: str


ChatEvent = Annotated[
    StatusEvent
    | ToolCallEvent
    | SourcesEvent
    | DeltaEvent
    | CitationsEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]


def event_data(event: ChatEvent) -> dict[str, Any]:
    """The event's fields as JSON-ready data, without its `type`."""
    return event.model_dump(mode="json", exclude={"type"})


def sse(event: ChatEvent) -> str:
    """The event as one Server-Sent Event: `event: <type>` and its fields as JSON `data`."""
    return f"event: {event.type}\ndata: {json.dumps(event_data(event), ensure_ascii=False)}\n\n"


@dataclass(frozen=True)
class Collected:
    """An answer as its events told it: its text, its citations and its `done` event."""

    text: str
    citations: list[Citation]
    done: DoneEvent | None


def collected(
    events: Iterable[ChatEvent],
    *,
    each: Callable[[ChatEvent], None] | None = None,
    said: Callable[[str], str] = lambda message: message,
) -> Collected:
    """The answer `events` tell, each passed to `each` first (to show it as it comes); an
    `error` event raises its code's DocchatError with its message as `said` puts it."""
    text: list[str] = []
    citations: list[Citation] = []
    done: DoneEvent | None = None
    for event in events:
        if each is not None:
            each(event)
        match event:
            case DeltaEvent():
                text.append(event.text)
            case CitationsEvent():
                citations = event.citations
            case DoneEvent():
                done = event
            case ErrorEvent(code=code, message=message):
                raise REGISTRY.get(code, DocchatError)(said(message))
    return Collected(text="".join(text), citations=citations, done=done)
