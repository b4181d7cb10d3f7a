"""Pydantic contracts shared by the library, the Lambdas and the CLI."""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from docchat.errors import CollectionNameError, DocchatError
from docchat.limits import MAX_DOC_IDS, MAX_SCOPE_COLLECTIONS

#: What a document's "page" is: a PDF page, or a location of another format (a section of a
#: Word document, web page or Markdown file; a slide; a sheet or range of a sheet's rows).
PageKind = Literal["page", "section", "slide", "sheet"]


class Page(BaseModel):
    """One page of a document as markdown: a PDF page, or a location of another format (a
    section, a slide, a sheet range); `number` is its 1-based ordinal."""

    number: int = Field(ge=1)
    markdown: str
    chars: int = Field(ge=0, description="non-whitespace characters of text on the page")
    image_only: bool = False
    ocr: bool = Field(default=False, description="the page's text came from OCR of its image")
    kind: PageKind = "page"
    # What a citation names: "" for a PDF page ("p. 12"), else "Slide 3: Results",
    # "Sheet 'Revenue' A1:F40", "Section: Introduction > Scope".
    label: str = ""

    @property
    def where(self) -> str:
        """The page as a reader names it: its label, or "page N"."""
        return self.label or f"page {self.number}"


class OcrText(BaseModel):
    """One line OCR read on a page, placed in PDF points as conversion places a text line
    (`y`: its baseline, from the page's bottom; `size`: its height)."""

    text: str
    size: float
    x: float
    y: float
    right: float
    y_end: float


class OcrPage(BaseModel):
    """The lines OCR read on one page (1-based `number`), in reading order."""

    number: int = Field(ge=1)
    lines: list[OcrText]


class ConvertedDocument(BaseModel):
    title: str
    pages: list[Page]
    pages_without_text: int
    used_outline: bool
    # Pages that need OCR whose results were not given (the cloud's OCR step reads them).
    ocr_pending: list[int] = Field(default_factory=list)
    # The file's format ("pdf", "docx", "pptx", "xlsx", "html", "md", "txt").
    format: str = "pdf"

    @property
    def pages_ocr(self) -> int:
        """How many pages were read by OCR."""
        return sum(page.ocr for page in self.pages)


def is_url(source: str) -> bool:
    """Whether a document's source is a web page's URL (synced by `docchat sync`)."""
    return source.startswith(("http://", "https://"))


def synced_copy(folder: Path, doc_id: str) -> Path:
    """Where `docchat sync` keeps, in `folder` (`Settings.synced_files`), the PDF a synced web
    document was read from: the viewer shows it (adapters/local_files.py)."""
    return folder / f"{doc_id}.pdf"


def source_name(source: str) -> str:
    """What a user is shown of a document's source: a local file's name, never the server's
    path to it (local sources are absolute paths); in the cloud, the object's key in the bucket
    (`bucket/key` minus the bucket), which is the name the uploader gave it; a synced web
    page's URL whole (docchat.sources)."""
    if is_url(source):
        return source
    for flavour in (PurePosixPath, PureWindowsPath):
        path = flavour(source)
        if path.is_absolute():
            return path.name
    bucket, slash, key = source.partition("/")
    return key if slash and key else bucket


def file_name(source: str) -> str:
    """The name of a document's file, without folders: what is shown beside its title. A
    synced file's name as its site's link spells it ("rapport été.pdf", not "rapport%20..."),
    without the link's query. A document whose source holds no name (a Drive file's link) has
    the name it was read as in its record (`DocumentRecord.file_name`)."""
    if is_url(source):
        return unquote(PurePosixPath(urlsplit(source).path).name)
    return PurePosixPath(source_name(source).replace("\\", "/")).name


def own_file_name(source: str, name: str) -> str:
    """What a chunk keeps of its document's file `name`: "" when `source` ends in it (almost
    always), the name itself when it does not (a Drive file's link ends in "view")."""
    return "" if not name or name == file_name(source) else name


def file_label(source: str, title: str) -> str:
    """A document's file name without its extension ("amazon-10k-2017" of
    ".../amazon-10k-2017.pdf"), or "" when it only repeats the title (a PDF without a title of
    its own is titled by its file name) or there is no file."""
    label = PurePosixPath(file_name(source)).stem if source else ""
    return "" if label.casefold() == title.strip().casefold() else label


def chunk_id_of(doc_id: str, version: str, n: int) -> str:
    """The id of chunk `n` (from 0, in reading order) of a document's version."""
    return f"{doc_id}:{version[:12]}:{n:05d}"


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
    # The labels of pages page_start .. page_end when they are not PDF pages ("Slide 3: Results",
    # "Sheet 'Revenue' A1:F40"); empty for a PDF. A citation names its page with them.
    page_labels: list[str] = Field(default_factory=list)
    text: str
    embedding_model: str = ""
    # One sentence the chat model wrote on what the chunk is about within its document, when
    # DOCCHAT_CHUNK_CONTEXT=model (docchat.ingest.notes); part of `context`, never shown or quoted.
    note: str = ""
    # The document's file name when its source does not end in it (`own_file_name`): what its
    # context names the file by.
    file_name: str = ""

    @property
    def following_id(self) -> str:
        """The id of the chunk after this one in its document (there may be none)."""
        head, _, n = self.chunk_id.rpartition(":")
        return f"{head}:{int(n) + 1:05d}" if n.isdigit() else ""

    @property
    def file_label(self) -> str:
        """What the file's name adds to the title (see `file_label`)."""
        return file_label(self.file_name or self.source, self.title)

    @property
    def context(self) -> str:
        """Where the chunk comes from, one line each: file name, document title, heading path
        (contextual retrieval without a model: what a chunk alone does not say), and the
        model-written note when there is one."""
        parts = [self.file_label, self.title, " > ".join(self.headings), self.note]
        return "\n".join(part for part in parts if part.strip())

    @property
    def embed_text(self) -> str:
        """The contextual text: what gets embedded and what BM25 reads (its context, then its
        text). What is stored, shown and quoted is `text` alone."""
        return "\n".join(part for part in (self.context, self.text) if part)

    def page_at(self, offset: int) -> int:
        """The page the character at `offset` of `text` is on."""
        return self.page_start + bisect_right(self.page_breaks, offset)

    def label_of(self, page: int) -> str:
        """The label of `page` (one of this chunk's), or "" for a PDF page."""
        at = page - self.page_start
        return self.page_labels[at] if 0 <= at < len(self.page_labels) else ""


#: The collection every document is in unless placed elsewhere; it always exists.
DEFAULT_COLLECTION = "default"
COLLECTION_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
_COLLECTION = re.compile(COLLECTION_PATTERN)
#: An object key under this prefix places a direct S3 upload: `collections/<name>/...`.
COLLECTIONS_PREFIX = "collections/"


def collection_name(name: str) -> str:
    """`name` if it is a collection's name (lower-case letters, digits and hyphens, 1-63,
    not starting with a hyphen), else CollectionNameError saying so."""
    if not isinstance(name, str) or not _COLLECTION.match(name):
        raise CollectionNameError(
            f"{name!r} is not a collection name: use 1-63 lower-case letters, digits and "
            "hyphens, starting with a letter or digit (e.g. 'finance' or 'team-2')"
        )
    return name


def collections_of(names: Iterable[str] | str | None) -> list[str]:
    """Collection names sorted and without repeats; none (or a JSON list as text, as SQLite
    stores them) read as the default collection."""
    if isinstance(names, str):
        names = json.loads(names) if names.startswith("[") else [names]
    found = sorted({collection_name(n) for n in names or ()})
    return found or [DEFAULT_COLLECTION]


def collection_of_key(key: str) -> str:
    """The collection an object key places a direct S3 upload in: `collections/<name>/...` is
    in `<name>` (when that is a collection's name), any other key in the default one."""
    if key.startswith(COLLECTIONS_PREFIX):
        name, slash, rest = key[len(COLLECTIONS_PREFIX) :].partition("/")
        if slash and rest and _COLLECTION.match(name):
            return name
    return DEFAULT_COLLECTION


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
    pages_ocr: int = Field(default=0, ge=0, description="pages whose text came from OCR")
    chunks: int = 0
    error_code: str = ""
    error: str = ""
    updated_at: float = 0.0
    # 1 for a document's first content; each different content under the same name adds 1.
    revision: int = Field(default=1, ge=1)
    # The collections the document is in (sorted, at least one); records kept before
    # collections existed read as the default one.
    collections: list[str] = Field(default_factory=lambda: [DEFAULT_COLLECTION])
    # The document's file name without folders, shown beside its title: the source's (see
    # `file_name`), or the name it was read as when its source holds none (a synced Drive
    # file, whose source is its link). Records kept before it was stored read the source's.
    file_name: str = ""

    @field_validator("collections", mode="before")
    @classmethod
    def _collections(cls, names: Any) -> list[str]:
        return collections_of(names)

    @model_validator(mode="after")
    def _file_name(self) -> DocumentRecord:
        if not self.file_name:
            self.file_name = file_name(self.source)
        return self


class RegistryEntry(DocumentRecord):
    """A document as the cloud's registry holds it: its record, the S3 event and the run that
    claimed it, and the index its version was indexed in (set when it became INDEXED)."""

    sequencer: str = ""
    execution_id: str = ""
    index: str = ""
    #: The object (bucket/key) a synced document is in, its source being its page's URL
    #: (docchat.ingest.synced); empty when the source is the object.
    stored_at: str = ""


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
    # Where the quote is when the document is not a PDF ("Slide 3: Results", "Sheet 'Revenue'
    # A1:F40", "Section: Scope"); "" for a PDF page, which `page` names.
    label: str = ""
    # A quoted table row's table header rows, as the page has them (`quote` is the row's line);
    # a quoted sentence has none, and its JSON leaves the field out.
    table_header: list[str] = Field(default_factory=list)
    # The page a quote ends on when a page break cuts its sentence (it starts on `page` and
    # goes on at the top of this one); None for a quote on one page, and its JSON leaves the
    # field out.
    page_end: int | None = None

    @model_serializer(mode="wrap")
    def _table_header_only_for_rows(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if not self.table_header:
            dumped.pop("table_header", None)
        if self.page_end is None:
            dumped.pop("page_end", None)
        if not self.label:
            dumped.pop("label", None)
        return dumped


class Answer(BaseModel):
    text: str
    citations: list[Citation]
    mode: str = Field(description="'extractive' when no language model wrote it")


class Scope(BaseModel):
    """What a question is asked over: these collections (None: every collection the user may
    read) and, within them, these documents (None: all). Always within what the user may read."""

    model_config = ConfigDict(frozen=True)

    collections: list[Annotated[str, Field(pattern=COLLECTION_PATTERN)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_SCOPE_COLLECTIONS,
        description="collection names; none: every collection you may read",
    )
    doc_ids: list[str] | None = Field(
        default=None, min_length=1, max_length=MAX_DOC_IDS, description="only these documents"
    )

    @field_validator("collections")
    @classmethod
    def _names(cls, names: list[str] | None) -> list[str] | None:
        if names is None:
            return None
        try:
            return collections_of(names)
        except DocchatError as exc:
            raise ValueError(str(exc)) from None


class UploadTicket(BaseModel):
    """Where and how the browser puts one file into the documents bucket."""

    method: Literal["PUT"] = "PUT"
    url: str
    headers: dict[str, str]
    key: str
    doc_id: str
    expires_in: int


class FileLink(BaseModel):
    """A short-lived URL the browser reads one document's PDF from (a presigned S3 GET)."""

    url: str
    expires_in: int


class Removal(BaseModel):
    doc_id: str
    status: Literal["deleted", "deleting"]


class Feedback(BaseModel):
    """What the conversation's user thought of one saved answer: a rating, an optional comment,
    when (epoch seconds), and the version of each cited document the user could read then
    (doc_id -> content hash), so that a later reader knows which text was judged."""

    model_config = ConfigDict(frozen=True)

    rating: Literal["up", "down"]
    comment: str = ""
    at: float
    versions: dict[str, str] = Field(default_factory=dict)


class StoredMessage(BaseModel):
    """A question, or an answer with the passages it cites; `stopped`: an answer its reader
    stopped (the page's Stop, a closed tab), kept as far as it had come; `feedback`: the
    user's rating of an answer, if any (gone when the answer is replaced)."""

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    content: str
    citations: list[Citation] = Field(default_factory=list)
    stopped: bool = False
    # A question's scope (collections, documents) when it was asked in one; the page reopens
    # a conversation in its last question's scope. Left out of the JSON when there is none.
    scope: Scope | None = None
    # Left out of the JSON when the answer is not rated.
    feedback: Feedback | None = None

    @model_serializer(mode="wrap")
    def _scope_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if self.scope is None:
            dumped.pop("scope", None)
        if self.feedback is None:
            dumped.pop("feedback", None)
        return dumped


class RatedAnswer(BaseModel):
    """One rated answer of a conversation, read back whole: its position among the
    conversation's messages, the question it answers, its text and citations, and the rating."""

    model_config = ConfigDict(frozen=True)

    position: int
    question: str
    answer: str
    citations: list[Citation]
    feedback: Feedback


class Turn(BaseModel):
    """A message before a rated answer, as it was asked and answered: its role and text."""

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    content: str


class RatedQuestion(BaseModel):
    """One rated answer as a question of the team's test set (`docchat feedback export`, one
    JSON line each, and `docchat eval feedback`): who asked, in which conversation, the turns
    before it, the scope it was asked in, what was answered and cited, and the rating."""

    model_config = ConfigDict(frozen=True)

    user: str
    conversation_id: str
    position: int
    question: str
    history: list[Turn] = Field(default_factory=list)
    scope: Scope | None = None
    answer: str
    citations: list[Citation]
    feedback: Feedback


class ConversationSummary(BaseModel):
    """What the list shows: id, title and when it last changed (epoch seconds)."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    updated: float


class Conversation(ConversationSummary):
    created: float
    messages: list[StoredMessage] = Field(default_factory=list)

    def summary(self) -> ConversationSummary:
        return ConversationSummary(id=self.id, title=self.title, updated=self.updated)
