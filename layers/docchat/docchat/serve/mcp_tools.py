"""What docchat's MCP tools take, do and return (the server is serve/mcp.py).

Tools (inputs are the agent's own pydantic models, answer/tools.py, plus `AskInput`):
  search          passages with document, title, file name, pages, text and a viewer link
  read_pages      up to MAX_READ_PAGES pages of a document, as conversion extracted them
  list_documents  the indexed documents
  ask             an answer with verified quotes and page citations, written as /chat writes it
                  (by the configured model, or extractively without one)

Each runs for the caller's `Access` (serve/access.py, the routes' own), over a backend that sees
only the collections it may read: search and answers filter inside the index, and a document
outside them is not found, exactly like one that does not exist. The work is plain blocking
functions over the chat backend (`LibraryView`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, urlencode

from pydantic import BaseModel, ConfigDict, Field, field_validator

from docchat.answer.backend import ChatBackend
from docchat.answer.events import ChatEvent, RankedPassage, collected
from docchat.answer.tools import (
    MAX_READ_PAGES,
    ListDocumentsInput,
    ReadPagesInput,
    SearchDocumentsInput,
    ToolInput,
)
from docchat.errors import DocumentNotFoundError, PageNotFoundError
from docchat.limits import MAX_DOC_IDS, MAX_MESSAGE_CHARS
from docchat.models import Chunk, Citation, DocumentRecord, file_name, source_name
from docchat.search.catalog import Catalog
from docchat.search.titles import date_of, form_of, listed_company, title_years
from docchat.serve.access import Access

DOCUMENTS_URI = "docchat://documents"
PAGE_URI = DOCUMENTS_URI + "/{doc_id}/pages/{number}"
NOT_FOUND_HINT = "list_documents lists the documents you can read"


# --- what the tools take and return -------------------------------------------------------------


class AskInput(ToolInput):
    question: str = Field(
        min_length=1, max_length=MAX_MESSAGE_CHARS, description="the question, in your words"
    )
    doc_ids: list[str] | None = Field(
        None, max_length=MAX_DOC_IDS, description="only answer from these documents"
    )

    @field_validator("question")
    @classmethod
    def _not_blank(cls, question: str) -> str:
        if not question.strip():
            raise ValueError("the question is only white space: write something")
        return question


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True)


class FoundPassage(RankedPassage):
    """A passage a search found, with its file's name and a link that opens its first page."""

    file_name: str
    link: str


class SearchOutput(_Output):
    query: str
    passages: list[FoundPassage]
    reranked: bool
    rerank_note: str = Field(description="why the passages kept their fused order, if so")
    scope_note: str = Field(
        "", description="which documents were searched, when the query's company was unclear"
    )


class PageText(_Output):
    number: int
    text: str = Field(description="the page as conversion extracted it (markdown)")
    ocr: bool = Field(description="the text was read by OCR from the page's image")
    link: str


class PagesOutput(_Output):
    doc_id: str
    title: str
    file_name: str
    page_count: int
    pages: list[PageText]
    note: str = Field(description="what was left out of the pages asked for, and how to get it")


class DocumentEntry(_Output):
    doc_id: str
    title: str
    file_name: str
    pages: int
    link: str = Field(description="opens the document's first page in the chat page's viewer")
    company: str = Field(
        "", description="the company its title names, with its trading symbol; search by it"
    )
    years: list[str] = Field(
        default_factory=list, description="the (fiscal) years its title says it covers"
    )
    form: str = Field(
        "",
        description='the form its title names ("10-K", "10-Q", "8-K"; "release" for an earnings '
        "release); search by it",
    )
    date: str = Field(
        "",
        description="the last date its title names (a period's end, a report's date), YYYY-MM-DD",
    )
    quarter: str = Field(
        "",
        description='the fiscal quarter a quarterly report or release covers ("Q2 FY2024", in '
        "the company's fiscal calendar); search by it",
    )
    collections: list[str] = Field(
        default_factory=list, description="the collections it is in; search by one"
    )


class DocumentsOutput(_Output):
    documents: list[DocumentEntry]


class LinkedCitation(Citation):
    """A verified quote, with its file's name and a link that opens its page, quote marked."""

    file_name: str
    link: str


class AskOutput(_Output):
    answer: str = Field(description="cites passages as [n], the `number` of its citations")
    mode: Literal["model", "extractive"]
    citations: list[LinkedCitation]


@dataclass(frozen=True)
class Tool:
    """An MCP tool: its name, what it is for, and the models of its input and result."""

    name: str
    description: str
    input: type[ToolInput]
    output: type[_Output]


TOOLS = (
    Tool(
        "search",
        "Hybrid keyword and semantic search over the documents. Returns the best passages, "
        "each with its document id, title, file name, pages and a link that opens the page "
        "in docchat's viewer.",
        SearchDocumentsInput,
        SearchOutput,
    ),
    Tool(
        "read_pages",
        f"Read up to {MAX_READ_PAGES} consecutive pages of one document (ids from "
        "list_documents or search), as their text was extracted.",
        ReadPagesInput,
        PagesOutput,
    ),
    Tool(
        "list_documents",
        "List the indexed documents: id, title, file name, pages, and the company, form, years, "
        "date and quarter their titles say, and their collections (search filters by company, "
        "year, quarter, form and collection).",
        ListDocumentsInput,
        DocumentsOutput,
    ),
    Tool(
        "ask",
        "Answer a question from the documents, with verified quotes and the pages they are "
        "on. Without a language model configured the answer is extractive: the passages that "
        "best match, quoted.",
        AskInput,
        AskOutput,
    ),
)
BY_NAME = {tool.name: tool for tool in TOOLS}


def page_link(web_url: str, doc_id: str, page: int, *, quote_text: str = "") -> str:
    """The address at which the chat page opens `page` of the document in its viewer (with
    `quote_text` marked, when given): `<web_url>#doc=<id>&page=<n>[&quote=<text>]`."""
    fragment = {"doc": doc_id, "page": str(page), **({"quote": quote_text} if quote_text else {})}
    return f"{web_url.split('#')[0]}#{urlencode(fragment, quote_via=quote)}"


# --- the tools' work: plain blocking functions over the backend -------------------------------


@dataclass(frozen=True)
class LibraryView:
    """The backend as one caller sees it (`backend` within the collections `access` may read),
    links to the viewer."""

    backend: ChatBackend
    access: Access
    web_url: str

    def catalog(self) -> Catalog:
        """The indexed documents this caller may read."""
        return self.backend.library.catalog()

    def scope(self, asked: Sequence[str] | None, catalog: Catalog) -> list[str] | None:
        """The documents a search or answer may use: those asked for, each of which must be
        readable, or (None) every readable one, of which a caller limited to some
        collections must have one."""
        if asked:
            unknown = [d for d in dict.fromkeys(asked) if d not in catalog.records]
            if unknown:
                raise DocumentNotFoundError(
                    f"unknown document ids: {', '.join(unknown)}; {NOT_FOUND_HINT}"
                )
            return list(dict.fromkeys(asked))
        if self.access.readable is not None and not catalog.records:
            raise DocumentNotFoundError(f"there are no documents you may read: {NOT_FOUND_HINT}")
        return None

    def record(self, doc_id: str, catalog: Catalog) -> DocumentRecord:
        record = catalog.records.get(doc_id)
        if record is None:
            raise DocumentNotFoundError(f"no document with id {doc_id!r}: {NOT_FOUND_HINT}")
        return record

    def link(self, doc_id: str, page: int, quote_text: str = "") -> str:
        return page_link(self.web_url, doc_id, page, quote_text=quote_text)

    def search(self, args: SearchDocumentsInput) -> SearchOutput:
        catalog = self.catalog()
        found = self.backend.library.search(
            args.query,
            top_k=self.backend.config.top_k,
            doc_ids=args.documents(catalog, self.scope(args.doc_ids, catalog)),
            catalog=catalog,
        )
        passages = [
            FoundPassage(
                **_passage(number, p.chunk),
                score=p.score,
                vector_rank=p.vector_rank,
                keyword_rank=p.keyword_rank,
                file_name=named(catalog, p.chunk.doc_id, p.chunk.source),
                link=self.link(p.chunk.doc_id, p.chunk.page_start),
            )
            for number, p in enumerate(found.passages, start=1)
        ]
        return SearchOutput(
            query=args.query,
            passages=passages,
            reranked=found.reranked,
            rerank_note=found.rerank_note,
            scope_note=found.scope_note,
        )

    def read_pages(self, args: ReadPagesInput) -> PagesOutput:
        record = self.record(args.doc_id, self.catalog())
        every = self.backend.library.extracted_pages(record.doc_id)
        first, asked_last = args.first_page, max(args.first_page, args.last_page)
        if first > len(every):
            raise PageNotFoundError(
                f"{record.doc_id} has {len(every)} page{'s' if len(every) != 1 else ''}: page "
                f"{first} is out of range, ask for 1-{len(every)}"
            )
        last = min(asked_last, len(every), first + MAX_READ_PAGES - 1)
        note = ""
        if last < asked_last:
            why = (
                f"the document has {len(every)} pages"
                if last == len(every)
                else f"read_pages returns up to {MAX_READ_PAGES} pages a call; call again from "
                f"page {last + 1}"
            )
            note = f"pages {first}-{last} of the {first}-{asked_last} asked for: {why}"
        return PagesOutput(
            doc_id=record.doc_id,
            title=record.title,
            file_name=record.file_name,
            page_count=len(every),
            pages=[
                PageText(
                    number=p.number,
                    text=p.markdown,
                    ocr=p.ocr,
                    link=self.link(record.doc_id, p.number),
                )
                for p in every[first - 1 : last]
            ],
            note=note,
        )

    def list_documents(self, _: ListDocumentsInput) -> DocumentsOutput:
        catalog = self.catalog()
        return DocumentsOutput(
            documents=[
                DocumentEntry(
                    doc_id=r.doc_id,
                    title=r.title,
                    file_name=r.file_name,
                    pages=r.pages,
                    link=self.link(r.doc_id, 1),
                    company=listed_company(r.title),
                    years=sorted(title_years(r.title)),
                    form=form_of(r.title),
                    date=date_of(r.title),
                    quarter=catalog.quarter_named(r.doc_id),
                    collections=r.collections,
                )
                for r in catalog.records.values()
            ]
        )

    def answer(self, args: AskInput) -> Iterator[ChatEvent]:
        """The events /chat streams for the question, within the caller's documents (checked
        now, before the first event)."""
        doc_ids = self.scope(args.doc_ids, self.catalog())
        return self.backend.agent().run(
            [{"role": "user", "content": args.question}], doc_ids=doc_ids
        )

    def collected(self, events: Iterable[ChatEvent]) -> AskOutput:
        """The answer's text, citations and mode, from its events; an `error` event raises."""
        told = collected(events)
        catalog = self.catalog()
        mode: Literal["model", "extractive"] = (
            told.done.mode if told.done else "model" if self.backend.model else "extractive"
        )
        return AskOutput(
            answer=told.text,
            mode=mode,
            citations=[
                LinkedCitation(
                    **c.model_dump(),
                    file_name=named(catalog, c.doc_id, c.source),
                    link=self.link(c.doc_id, c.page, c.quote),
                )
                for c in told.citations
            ],
        )

    def run(self, name: str, args: ToolInput) -> BaseModel:
        """What tool `name` returns for `args` (its validated input); `ask` is answered event
        by event instead (`answer`, `collected`), so that a cancelled call stops it."""
        match args:
            case SearchDocumentsInput():
                return self.search(args)
            case ReadPagesInput():
                return self.read_pages(args)
            case ListDocumentsInput():
                return self.list_documents(args)
        raise NotImplementedError(f"{name} has an input model but no handler")

    def documents_json(self) -> str:
        """The documents resource: each readable document and the URI of its pages."""
        listed = self.list_documents(ListDocumentsInput())
        shown = [
            {**d.model_dump(), "page_uri": PAGE_URI.replace("{doc_id}", d.doc_id)}
            for d in listed.documents
        ]
        return json.dumps({"documents": shown}, ensure_ascii=False, indent=2)

    def page_text(self, doc_id: str, number: int) -> str:
        record = self.record(doc_id, self.catalog())
        [page] = self.backend.library.extracted_pages(record.doc_id, first=number, last=number)
        return page.markdown


def _passage(number: int, chunk: Chunk) -> dict[str, Any]:
    return {
        "number": number,
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "title": chunk.title,
        "source": source_name(chunk.source),
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
        "headings": chunk.headings,
        "text": chunk.text,
    }


def named(catalog: Catalog, doc_id: str, source: str) -> str:
    """The file name of the document a passage or citation is from: its record's (a synced
    Drive file's source holds none), or its source's if the record is gone."""
    record = catalog.records.get(doc_id)
    return record.file_name if record is not None else file_name(source)
