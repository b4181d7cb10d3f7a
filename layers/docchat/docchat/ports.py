"""The Protocols the domain depends on: what it needs from an index, an embedder, a registry,
object storage, a chat model, a reranker, the upload side and saved conversations. Adapters
(docchat.adapters) implement them; the wiring (docchat.wiring) builds the adapters and hands
them over typed as these ports, so mypy checks each adapter against the port it is used as
(docchat.wiring.conformance lists every pair)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from docchat.answer.conversations import Conversation, ConversationSummary, StoredMessage
from docchat.llm import Message, ModelEvent, ToolSpec
from docchat.models import (
    Chunk,
    DocumentRecord,
    FileLink,
    Page,
    Passage,
    RegistryEntry,
    Removal,
    UploadTicket,
)
from docchat.payloads import ExecutionFailure

# --- embedding and search (chat side) ---------------------------------------------------------

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> Vectors:
        """One row per text, in order; `on_batch` hears how many texts each batch finished."""
        ...

    def embed_query(self, text: str) -> Vectors: ...


class SearchIndex(Protocol):
    """What retrieval needs from an index: two ranked lists of chunk ids, and the chunks.

    Both searches filter inside the index, so the top k are all wanted chunks: `doc_ids` keeps
    those documents' chunks, `versions` (doc_id -> version) only those documents' chunks of
    that version; given both, a chunk must pass both.
    """

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]: ...

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]: ...

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]: ...


class ChunkReader(SearchIndex, Protocol):
    """A search index that also reads a document's chunks in order (the agent's page reads)."""

    def document_chunks(self, doc_id: str, *, version: str | None = None) -> list[Chunk]: ...


class Reranker(Protocol):
    def rerank(self, query: str, passages: Sequence[Passage], *, top_n: int) -> list[Passage]: ...


class SentenceVectors(NamedTuple):
    """A chunk's scored sentences (where each starts in its text) and their vectors, as the
    sentence reranker embeds them (docchat.search.rerank)."""

    starts: tuple[int, ...]
    vectors: Vectors


class SentenceStore(Protocol):
    """Where sentence vectors are kept, so that each chunk's are embedded once: at ingestion,
    or the first time a search meets the chunk."""

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, SentenceVectors]:
        """Those kept of these chunks."""
        ...

    def save_sentence_vectors(self, found: Mapping[str, SentenceVectors]) -> None:
        """Keep these (a store that cannot write keeps nothing, and says nothing)."""
        ...


class DocumentRegistry(Protocol):
    """The documents as the chat side lists them."""

    def documents(self) -> list[DocumentRecord]: ...

    def document(self, doc_id: str) -> DocumentRecord | None: ...


@runtime_checkable
class RevisedRegistry(DocumentRegistry, Protocol):
    """A registry that tells when it changed: its catalog is kept until then."""

    def revision(self) -> int:
        """A number that changes whenever a record changes (in this process or another)."""
        ...


class ChatModel(Protocol):
    """One streamed model turn: text deltas as they come, then tool calls, then TurnEnd."""

    @property
    def model_id(self) -> str: ...

    def stream(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> Iterator[ModelEvent]: ...


class ConversationStore(Protocol):
    """Each user's saved conversations. Every call names the user; another user's conversation
    is not found (None, or False), never read or changed."""

    def conversations(self, user: str) -> list[ConversationSummary]:
        """The user's conversations, newest first (at most MAX_CONVERSATIONS_LISTED)."""
        ...

    def conversation(self, user: str, conversation_id: str) -> Conversation | None: ...

    def start(self, user: str, conversation_id: str, *, title: str) -> Conversation:
        """The conversation, made (empty, with `title`) if the user has none with that id."""
        ...

    def append(
        self,
        user: str,
        conversation_id: str,
        messages: Sequence[StoredMessage],
        *,
        after: int | None = None,
    ) -> Conversation | None:
        """Add `messages` after the first `after` saved ones (replacing any beyond them: an
        answer asked again, or one that was stopped), or at the end; None if the conversation
        is gone (deleted meanwhile). ConversationFullError if it would grow past
        MAX_CONVERSATION_BYTES."""
        ...

    def rename(
        self, user: str, conversation_id: str, *, title: str
    ) -> ConversationSummary | None: ...

    def delete(self, user: str, conversation_id: str) -> bool: ...


# --- local ingestion and uploads ----------------------------------------------------------------


class DocumentIndex(Protocol):
    """What ingestion needs from an index and registry; the same bytes under a second name
    are a copy of the first document's chunks (`copy_document`), embedded once."""

    def document(self, doc_id: str) -> DocumentRecord | None: ...

    def set_record(self, record: DocumentRecord) -> None: ...

    def clear_chunks(self, doc_id: str) -> None: ...

    def replace_document(
        self,
        record: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: Vectors,
        *,
        pages: Sequence[Page] = (),
        sentences: Sequence[SentenceVectors] = (),
    ) -> None: ...

    def indexed_version(self, version: str) -> DocumentRecord | None: ...

    def copy_document(self, from_doc_id: str, record: DocumentRecord) -> None: ...


class LocalIndex(DocumentIndex, Protocol):
    """What local uploads need from the embedded index: ingestion's writes and deletion."""

    def documents(self) -> list[DocumentRecord]: ...

    def delete_document(self, doc_id: str) -> None: ...

    def unfinished(self) -> list[DocumentRecord]: ...

    @property
    def read_only(self) -> bool: ...


class Writer(Protocol):
    """Who adds a document: an upload that lands on an existing document changes it in every
    collection it is in (serve.access.Access is one)."""

    def check_change(self, collections: Iterable[str], *, what: str, instead: str = ...) -> None:
        """AccessDeniedError unless the writer may write every one of `collections`."""
        ...


class Uploads(Protocol):
    """How documents enter and leave: `direct` (this server indexes them) or `presigned` (S3)."""

    @property
    def kind(self) -> Literal["direct", "presigned"]: ...

    def receive(
        self, filename: str, data: bytes, *, collection: str, writer: Writer
    ) -> DocumentRecord: ...

    def upload_url(
        self, filename: str, *, size: int, collection: str, writer: Writer
    ) -> UploadTicket: ...

    def remove(self, doc_id: str) -> Removal: ...

    def move(self, doc_id: str, collections: Sequence[str]) -> DocumentRecord:
        """Put the document in exactly `collections`: its registry entry only, the index and
        its embeddings stay as they are (searches filter by the registry)."""
        ...


class DocumentFiles(Protocol):
    """Where the page's viewer reads a registered document's PDF: the file itself (local) or a
    short-lived URL to it (cloud). Never a path a request names: only a record's own source."""

    def pdf(self, record: DocumentRecord) -> Path | FileLink: ...


# --- the cloud pipeline -------------------------------------------------------------------------


class Objects(Protocol):
    """Object storage the ingestion steps read uploads from and keep artifacts in."""

    def exists(self, bucket: str, key: str) -> bool: ...

    def read(self, bucket: str, key: str) -> bytes: ...

    def sha256(self, bucket: str, key: str) -> str: ...

    def write_json(self, bucket: str, key: str, value: object) -> None: ...

    def read_json(self, bucket: str, key: str) -> object: ...

    def write_vectors(self, bucket: str, key: str, vectors: Vectors) -> None: ...

    def read_vectors(self, bucket: str, key: str) -> Vectors: ...

    def delete(self, bucket: str, key: str) -> None: ...

    def keys(self, bucket: str, prefix: str) -> list[str]: ...


class Registry(Protocol):
    """The pipeline's document registry, whose conditional writes order concurrent runs."""

    def get(self, doc_id: str) -> RegistryEntry | None: ...

    def claim(self, record: DocumentRecord, *, sequencer: str, execution_id: str) -> None: ...

    def update(self, doc_id: str, version: str, **fields: object) -> None: ...

    def fail_if_running(
        self, doc_id: str, execution_id: str, *, code: str, reason: str
    ) -> bool: ...

    def delete(self, doc_id: str, *, sequencer: str) -> bool: ...


class Executions(Protocol):
    """The ingestion runs Step Functions keeps: why one stopped."""

    def failure(self, execution_arn: str) -> ExecutionFailure: ...


class ChunkIndex(Protocol):
    """What the pipeline writes and removes in the search index."""

    @property
    def location(self) -> str:
        """Which index this is (cluster and index name): Register re-ingests a document that
        was indexed somewhere else."""
        ...

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> None: ...

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]: ...

    def delete_document(self, doc_id: str) -> object: ...


class PageStore(Protocol):
    """The text of each page as conversion extracted it, kept per document version (the
    embedded index locally, the artifacts bucket in the cloud)."""

    def stored_pages(self, doc_id: str, version: str) -> list[Page] | None:
        """The pages kept for this version of the document; None when none were kept."""
        ...
