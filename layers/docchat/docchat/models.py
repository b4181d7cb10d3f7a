"""Pydantic contracts shared by the library, the Lambdas and the CLI."""

from __future__ import annotations

from bisect import bisect_right
from enum import StrEnum

from pydantic import BaseModel, Field


class Page(BaseModel):
    """One PDF page as markdown; `number` is 1-based."""

    number: int = Field(ge=1)
    markdown: str
    chars: int = Field(ge=0, description="non-whitespace characters of text on the page")
    image_only: bool = False

    @property
    def has_text(self) -> bool:
        return self.chars > 0


class ConvertedDocument(BaseModel):
    title: str
    pages: list[Page]
    pages_without_text: int
    used_outline: bool


class Chunk(BaseModel):
    """A retrievable piece of a document with its exact page span."""

    chunk_id: str
    doc_id: str
    version: str
    source: str
    title: str
    headings: list[str]
    page_start: int = Field(ge=1)
    page_end: int = Field(ge=1)
    # Offsets in `text` where pages page_start+1 .. page_end begin.
    page_breaks: list[int] = Field(default_factory=list)
    text: str
    embedding_model: str = ""

    @property
    def embed_text(self) -> str:
        """The text that gets embedded: document title and heading path give context."""
        context = [self.title, " > ".join(self.headings)]
        return "\n".join(part for part in [*context, self.text] if part)

    def page_at(self, offset: int) -> int:
        """The page the character at `offset` of `text` is on."""
        return self.page_start + bisect_right(self.page_breaks, offset)


class DocStatus(StrEnum):
    QUEUED = "QUEUED"
    CONVERTING = "CONVERTING"
    CHUNKING = "CHUNKING"
    EMBEDDING = "EMBEDDING"
    INDEXING = "INDEXING"
    INDEXED = "INDEXED"
    FAILED = "FAILED"


class DocumentRecord(BaseModel):
    doc_id: str
    source: str
    title: str = ""
    version: str = ""
    status: DocStatus = DocStatus.QUEUED
    pages: int = 0
    pages_without_text: int = 0
    chunks: int = 0
    error_code: str = ""
    error: str = ""
    updated_at: float = 0.0


class Passage(BaseModel):
    """A retrieved chunk and how it ranked."""

    chunk: Chunk
    score: float
    vector_rank: int | None = None
    keyword_rank: int | None = None


class Citation(BaseModel):
    number: int
    doc_id: str
    title: str
    source: str
    page: int
    quote: str


class Answer(BaseModel):
    text: str
    citations: list[Citation]
    mode: str = Field(description="'extractive' when no language model wrote it")
