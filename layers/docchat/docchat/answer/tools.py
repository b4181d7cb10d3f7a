"""The agent's tools: each one object with its pydantic input model, the spec the model is given
(its JSON schema generated from that model), and how it runs.

A tool runs on an answer's `Reading` (the library, the chat's scope, the passages numbered so
far) and yields the chat events it causes (`sources`, `status` while the index wakes); what it
returns is the text the model reads. `call_tool` validates the model's input with the same
class: what fails goes back to the model as the tool's error result, naming the field, so it
can call again (`invalid_input_message`).
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from docchat.answer.events import (
    ChatEvent,
    RankedPassage,
    SourcePassage,
    SourcesEvent,
    StatusEvent,
    ToolCallEvent,
)
from docchat.errors import DocchatError
from docchat.llm import ToolResultBlock, ToolSpec, ToolUse
from docchat.models import Chunk, source_name
from docchat.search.catalog import Catalog
from docchat.search.library import Library
from docchat.search.quarters import quarters_asked
from docchat.search.titles import about

MAX_READ_PAGES = 5
WAKING = "waking the search index: after a quiet spell its first answer takes up to 30 seconds"
T = TypeVar("T")


class ToolInput(BaseModel):
    # A model that writes a number for a text field meant the text; extra keys are ignored.
    model_config = ConfigDict(frozen=True, coerce_numbers_to_str=True)


class SearchDocumentsInput(ToolInput):
    query: str = Field(description="what to look for")
    doc_ids: list[str] | None = Field(
        None, description="only search these documents (ids from list_documents)"
    )
    company: str | None = Field(
        None,
        max_length=200,
        description="only documents about this company: its name, ticker or initials",
    )
    year: str | None = Field(
        None, max_length=40, description='only documents about this (fiscal) year: "2022", "FY2022"'
    )
    form: str | None = Field(
        None,
        max_length=20,
        description='only filings of this form: "10-K", "10-Q", "8-K", or "earnings release"',
    )
    quarter: str | None = Field(
        None,
        max_length=60,
        description='only quarterly reports and releases of this fiscal quarter: "Q2 FY2024", '
        '"the second quarter of fiscal 2024" (in the company\'s own fiscal calendar)',
    )
    collection: str | None = Field(
        None, max_length=200, description="only documents in this collection"
    )

    @field_validator("quarter")
    @classmethod
    def _a_quarter(cls, quarter: str | None) -> str | None:
        if quarter is not None and not quarters_asked(quarter):
            raise ValueError(
                f'{quarter!r} names no fiscal quarter: write it as "Q2 FY2024" or "the '
                'second quarter of 2023", or filter by year'
            )
        return quarter

    def documents(self, catalog: Catalog, allowed: list[str] | None) -> list[str] | None:
        """The documents to search: `allowed` (those the chat may use, the model's choice of
        them) narrowed by the company, year, form, quarter and collection filters."""
        return catalog.matching(
            company=self.company,
            year=self.year,
            form=self.form,
            quarter=self.quarter,
            collection=self.collection,
            doc_ids=allowed,
        )


class ReadPagesInput(ToolInput):
    doc_id: str
    first_page: int = Field(ge=1)
    last_page: int = Field(ge=1)


class ListDocumentsInput(ToolInput):
    pass


In = TypeVar("In", bound=ToolInput)


@dataclass
class Reading:
    """What one answer's tool calls share: the library, the chat's documents (`doc_ids`; None:
    all), the passages numbered so far (`sources`), the calls made, and the time spent
    searching. The registry is read once per answer (`catalog`)."""

    library: Library
    top_k: int
    # A search index scaled to zero takes 10-30 s to answer; say so after this long (None: the
    # index never sleeps, as the local one).
    wake_notice_s: float | None
    doc_ids: Sequence[str] | None = None
    sources: list[Chunk] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)
    retrieval_s: float = 0.0
    # What the searches' reranking was billed as (SearchResult.search_units).
    search_units: int = 0
    # What the searches said of which documents they searched (`SearchResult.scope_note`).
    notes: list[str] = field(default_factory=list)
    _catalog: Catalog | None = field(default=None, init=False)
    _index_answered: bool = field(default=False, init=False)

    def number(self, chunk: Chunk) -> int:
        """The passage number of `chunk`: the one it was given, or the next."""
        for i, known in enumerate(self.sources, start=1):
            if known.chunk_id == chunk.chunk_id:
                return i
        self.sources.append(chunk)
        return len(self.sources)

    def catalog(self) -> Catalog:
        """The documents this answer may read, as the registry listed them at its first read."""
        if self._catalog is None:
            self._catalog = self.library.catalog()
        return self._catalog

    def index_call(self, call: Callable[[], T]) -> Generator[ChatEvent, None, T]:
        """`call()`'s result; while the answer's first index call is slow, a `status` event.

        Only the first can be slow for waking the index, so only it runs on a thread, with
        this generator free to tell the client why nothing happens yet.
        """
        if self._index_answered or self.wake_notice_s is None:
            return call()
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="docchat-search")
        try:
            pending = pool.submit(contextvars.copy_context().run, call)
            try:
                result = pending.result(timeout=self.wake_notice_s)
            except FutureTimeout:
                yield StatusEvent(stage="waking_index", message=WAKING)
                result = pending.result()
        finally:
            pool.shutdown(wait=False)  # a client gone mid-wait leaves the call to finish alone
        self._index_answered = True
        return result


@dataclass(frozen=True)
class Tool(Generic[In]):
    """A tool the model may call: `run` takes the validated input and returns what the model
    reads, yielding the chat events the call causes."""

    name: str
    description: str
    input: type[In]
    run: Callable[[Reading, In], Generator[ChatEvent, None, str]]

    @cached_property
    def spec(self) -> ToolSpec:
        """What the model is told of the tool: its name, description and input schema."""
        return ToolSpec(
            name=self.name, description=self.description, input_schema=input_schema(self.input)
        )


def search_documents(
    reading: Reading, args: SearchDocumentsInput
) -> Generator[ChatEvent, None, str]:
    """Hybrid search within the chat's documents (and the model's choice of them)."""
    catalog = reading.catalog()
    query, doc_ids = args.query, args.documents(catalog, _allowed(args.doc_ids, reading.doc_ids))
    started = time.monotonic()
    found = yield from reading.index_call(
        lambda: reading.library.search(query, top_k=reading.top_k, doc_ids=doc_ids, catalog=catalog)
    )
    reading.retrieval_s += time.monotonic() - started
    reading.search_units += found.search_units
    numbered = [(reading.number(p.chunk), p) for p in found.passages]
    yield SourcesEvent(
        query=query,
        reranked=found.reranked,
        rerank_note=found.rerank_note,
        passages=[
            RankedPassage(
                **source_passage(n, p.chunk).model_dump(),
                score=p.score,
                vector_rank=p.vector_rank,
                keyword_rank=p.keyword_rank,
            )
            for n, p in numbered
        ],
    )
    said = [found.scope_note] if found.scope_note else []
    if found.scope_note and found.scope_note not in reading.notes:
        reading.notes.append(found.scope_note)
    if not numbered:
        return "\n\n".join([*said, "No passage matches this query."])
    return "\n\n".join([*said, *(_passage_text(n, p.chunk) for n, p in numbered)])


def read_pages(reading: Reading, args: ReadPagesInput) -> Generator[ChatEvent, None, str]:
    """Up to MAX_READ_PAGES pages of one of the chat's documents."""
    doc_id = args.doc_id
    if reading.doc_ids is not None and doc_id not in reading.doc_ids:
        raise ValueError(f"document {doc_id} is outside the documents this chat may use")
    first = args.first_page
    last = min(args.last_page, first + MAX_READ_PAGES - 1)
    catalog = reading.catalog()
    chunks = yield from reading.index_call(
        lambda: reading.library.pages(doc_id, first, last, catalog=catalog)
    )
    numbered = [(reading.number(c), c) for c in chunks]
    yield SourcesEvent(
        query=f"{doc_id} pages {first}-{last}",
        reranked=False,
        rerank_note="",
        passages=[source_passage(n, c) for n, c in numbered],
    )
    if not numbered:
        return f"Document {doc_id} has no text on pages {first}-{last}."
    return "\n\n".join(_passage_text(n, c) for n, c in numbered)


def list_documents(reading: Reading, args: ListDocumentsInput) -> Generator[ChatEvent, None, str]:
    """The chat's indexed documents, one line each."""
    yield from ()  # a generator, as every tool is: listing causes no event
    catalog = reading.catalog()
    rows = [
        f"- {d.doc_id}: {d.title} (file {d.file_name}, {d.pages} pages"
        f"{about(d.title)}{_quarter_said(catalog, d.doc_id)}, "
        f"collections {', '.join(d.collections)})"
        for d in catalog.records.values()
        if reading.doc_ids is None or d.doc_id in reading.doc_ids
    ]
    return "\n".join(rows) or "No documents are indexed."


def _quarter_said(catalog: Catalog, doc_id: str) -> str:
    quarter = catalog.quarter_named(doc_id)
    return f", quarter {quarter}" if quarter else ""


SEARCH_DOCUMENTS = Tool(
    name="search_documents",
    description=(
        "Hybrid keyword and semantic search over the indexed documents. Returns numbered "
        "passages with document title and pages; cite them by number. Narrow it to a "
        "company, a fiscal year or quarter, a filing form or a collection when the question "
        "names them."
    ),
    input=SearchDocumentsInput,
    run=search_documents,
)
READ_PAGES = Tool(
    name="read_pages",
    description=f"Read up to {MAX_READ_PAGES} consecutive pages of one document.",
    input=ReadPagesInput,
    run=read_pages,
)
LIST_DOCUMENTS = Tool(
    name="list_documents",
    description=(
        "List the indexed documents: id, title, pages, company, form, years and quarter "
        "covered, and collections."
    ),
    input=ListDocumentsInput,
    run=list_documents,
)
TOOLS: dict[str, Tool[Any]] = {t.name: t for t in (SEARCH_DOCUMENTS, READ_PAGES, LIST_DOCUMENTS)}


def call_tool(reading: Reading, use: ToolUse) -> Generator[ChatEvent, None, ToolResultBlock]:
    """The `tool_call` event and the events of running the call `use`; its result for the
    model, an error result when the call repeats one, names no tool, has input that does not
    validate, or fails."""
    yield ToolCallEvent(id=use.id, name=use.name, input=use.input)
    key = f"{use.name}:{json.dumps(use.input, sort_keys=True)}"
    if key in reading.calls:
        return _result(use, "You already made this exact call; use its results.", error=True)
    reading.calls.add(key)
    tool = TOOLS.get(use.name)
    if tool is None:
        return _result(use, f"There is no tool named {use.name!r}.", error=True)
    try:
        args = tool.input.model_validate(use.input)
    except ValidationError as exc:  # the model can correct its call: tell it what is wrong
        return _result(use, invalid_input_message(use.name, exc), error=True)
    try:
        content = yield from tool.run(reading, args)
    except (DocchatError, ValueError, TypeError) as exc:
        return _result(use, f"The tool failed: {exc}", error=True)
    return _result(use, content)


class _ToolSchema(GenerateJsonSchema):
    """JSON Schema as the Messages API takes a tool's `input_schema`: an object with
    `properties` and `required` (https://docs.claude.com/en/docs/agents-and-tools/tool-use/
    implement-tool-use). Titles add nothing for the model; an optional field is simply not
    required, rather than `anyOf` with null."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])


def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The tool's `input_schema`, generated from its input model."""
    schema = model.model_json_schema(schema_generator=_ToolSchema)
    schema.pop("title", None)
    return schema


def invalid_input_message(tool: str, error: ValidationError) -> str:
    """What the model is told when its input to `tool` does not validate: each wrong or
    missing field, with what it gave, and how to go on."""
    problems = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(p) for p in item["loc"]) or "input"
        given = "" if item["type"] == "missing" else f" (you gave {item['input']!r})"
        problems.append(f"{loc}: {item['msg']}{given}")
    return (
        f"Invalid input for {tool}: {'; '.join(problems)}. Call {tool} again with input that "
        "matches its schema."
    )


def source_passage(number: int, chunk: Chunk) -> SourcePassage:
    """Passage `number` as a `sources` event carries it."""
    return SourcePassage(
        number=number,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        title=chunk.title,
        source=source_name(chunk.source),
        page_start=chunk.page_start,
        page_end=chunk.page_end,
        headings=chunk.headings,
        text=chunk.text,
    )


def _allowed(asked: Sequence[str] | None, allowed: Sequence[str] | None) -> list[str] | None:
    """The documents a search may see: the model's choice, never beyond the chat's filter."""
    chosen = list(asked) if asked else None
    if allowed is None:
        return chosen
    return [d for d in (chosen or allowed) if d in allowed] or list(allowed)


def _passage_text(number: int, chunk: Chunk) -> str:
    pages = where(chunk)
    path = " > ".join(chunk.headings)
    header = f"[{number}] {chunk.title}, {pages} (doc_id {chunk.doc_id})"
    return f"{header}{f' - {path}' if path else ''}\n{chunk.text}"


def _result(use: ToolUse, content: str, *, error: bool = False) -> ToolResultBlock:
    return {"type": "tool_result", "tool_use_id": use.id, "content": content, "is_error": error}


def where(chunk: Chunk) -> str:
    """The chunk's place as a citation names it: "p. 3", "pp. 3-4", or a non-PDF document's
    location labels ("Slide 3: Results", "Sheet 'Revenue' A1:F40")."""
    if chunk.page_labels:
        return "; ".join(dict.fromkeys(chunk.page_labels))
    if chunk.page_start == chunk.page_end:
        return f"p. {chunk.page_start}"
    return f"pp. {chunk.page_start}-{chunk.page_end}"
