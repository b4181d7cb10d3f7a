"""The Protocols the domain depends on: what it needs from an index, an embedder, a registry,
object storage, a chat model, a reranker, the upload side and saved conversations. Adapters
(docchat.adapters) implement them; the wiring (docchat.wiring) builds the adapters and hands
them over typed as these ports, so mypy checks each adapter against the port it is used as.
The index is two ports, named for what they hold: a DocumentCatalog and a ChunkStore."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from docchat.llm import Message, ModelEvent, ToolSpec
from docchat.models import (
    Chunk,
    Conversation,
    ConversationSummary,
    DocumentRecord,
    Feedback,
    FileLink,
    Page,
    Passage,
    RatedAnswer,
    RegistryEntry,
    Removal,
    StoredMessage,
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


class Reranker(Protocol):
    #: What prices it (answer/prices.py, DOCCHAT_PRICES_FILE's `search_unit`).
    model_id: str

    def rerank(self, query: str, passages: Sequence[Passage], *, top_n: int) -> list[Passage]: ...

    def search_units(self, passages: int) -> int:
        """What reranking `passages` passages at once is billed as: Bedrock's search units (a
        query of up to 100 passages each); 0 for a model that runs here."""
        ...

    def similarities(self, query: str, chunks: Sequence[Chunk]) -> dict[tuple[str, int], float]:
        """Each scored sentence's cosine with `query`, by (chunk id, where the sentence starts),
        for the extractive answer: none from a reranker that scores whole passages."""
        ...


class SentenceVectors(NamedTuple):
    """A chunk's scored sentences (where each starts in its text) and their vectors, as the
    sentence reranker embeds them (docchat.search.rerank)."""

    starts: tuple[int, ...]
    vectors: Vectors


# --- the index: a catalog of documents and a store of their chunks ---------------------------


class DocumentCatalog(Protocol):
    """The documents: one record each (status, version, revision, collections), as the chat
    side lists them and ingestion writes them. The SQLite index is local mode's catalog, the
    DynamoDB registry the cloud's (whose pipeline also claims records in order: `Registry`)."""

    @property
    def read_only(self) -> bool:
        """Whether writes raise ReadOnlyStorageError (a published index, a reader's view)."""
        ...

    def document(self, doc_id: str) -> DocumentRecord | None: ...

    def documents(self) -> list[DocumentRecord]: ...

    def unfinished(self) -> list[DocumentRecord]:
        """Documents whose indexing started and has not ended (INDEXED or FAILED)."""
        ...

    def indexed_version(self, version: str) -> DocumentRecord | None:
        """An indexed document whose content is exactly this version, if there is one."""
        ...

    def revision(self) -> int | None:
        """A number that changes whenever a record changes (in this process or another);
        None from a catalog that cannot tell, which is then read again for every chat."""
        ...

    def set_record(self, record: DocumentRecord) -> None:
        """Write a document's record as given, leaving its chunks as they are."""
        ...

    def forget(self, doc_id: str) -> None:
        """Remove the document's record (its chunks are the chunk store's to remove)."""
        ...


class ChunkStore(Protocol):
    """The chunks with their vectors and keyword index, what is kept per chunk (sentence
    vectors, model-written notes), and search under a filter.

    Both searches filter inside the index, so the top k are all wanted chunks: `doc_ids` keeps
    those documents' chunks, `versions` (doc_id -> version) only those documents' chunks of
    that version; given both, a chunk must pass both (the allowed versions of a reader go in
    here, and the library checks each chunk again).

    The store keeps no records: the caller writes the catalog beside it, in the order
    ingest/shelf.py keeps (chunks, then the record, then the other versions' removal), so a
    reader never sees a record whose chunks are not there. A store that cannot keep sentence
    vectors or notes keeps none and says nothing (they are computed again).
    tests/contract holds every store to this.
    """

    @property
    def location(self) -> str:
        """Which index this is (file, or cluster and index name): Register re-ingests a
        document that was indexed somewhere else."""
        ...

    # --- writing ------------------------------------------------------------------------------

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        """Add chunks (a retried batch replaces its own earlier copy): the pipeline's write."""
        ...

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]:
        """Remove the document's chunks of every version but `version`."""
        ...

    def delete_document(self, doc_id: str) -> object:
        """Remove every chunk of the document, all versions."""
        ...

    def copy_document(self, from_doc_id: str, record: DocumentRecord) -> int:
        """Copy the chunks and vectors of `from_doc_id` at `record.version` as `record`'s (the
        same bytes under a second name: copy_record), instead of any chunks it had, embedding
        nothing; how many were copied."""
        ...

    # --- reading ------------------------------------------------------------------------------

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """k-NN top-k as (chunk id, score where higher is better), best first."""
        ...

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 top-k as (chunk id, score where higher is better), best first."""
        ...

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id (those found)."""
        ...

    def document_chunks(self, doc_id: str, *, version: str | None = None) -> list[Chunk]:
        """A document's chunks in reading order, of one version when `version` is given."""
        ...

    # --- kept per chunk -----------------------------------------------------------------------

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, SentenceVectors]:
        """Those kept of these chunks (embedded by the first search that met the chunk)."""
        ...

    def save_sentence_vectors(self, found: Mapping[str, SentenceVectors]) -> None:
        """Keep these (a store that cannot write keeps nothing, and says nothing)."""
        ...

    def notes(self, keys: Sequence[str]) -> dict[str, str]:
        """The model-written notes kept under these keys (DOCCHAT_CHUNK_CONTEXT=model)."""
        ...

    def save_notes(self, notes: Mapping[str, str]) -> None: ...


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

    def delete(self, user: str, conversation_id: str) -> bool:
        """Forget the conversation, its feedback with it."""
        ...

    def rate(
        self, user: str, conversation_id: str, position: int, feedback: Feedback | None
    ) -> Conversation | None:
        """Rate the answer at `position` among the conversation's messages with `feedback`,
        replacing any rating it had, or clear its rating with None; None if the user has no
        such conversation, AnswerNotFoundError if the message there is not an answer. A rating
        stays with its answer until the answer is replaced (asked again)."""
        ...

    def ratings(self, user: str, conversation_id: str) -> list[RatedAnswer] | None:
        """The conversation's rated answers with their questions and citations, in order;
        None if the user has no such conversation."""
        ...

    def every_conversation(self) -> Iterator[tuple[str, Conversation]]:
        """Every user's conversations, each with its user, in no set order: for an admin's
        export of the rated answers (`docchat feedback`, GET /feedback), never for a user's."""
        ...


# --- local ingestion and uploads ----------------------------------------------------------------


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

    def metadata(self, bucket: str, key: str) -> Mapping[str, str]:
        """The object's user metadata (names lower-case, without `x-amz-meta-`)."""
        ...

    def write_json(self, bucket: str, key: str, value: object) -> None: ...

    def read_json(self, bucket: str, key: str) -> object: ...

    def write_vectors(self, bucket: str, key: str, vectors: Vectors) -> None: ...

    def read_vectors(self, bucket: str, key: str) -> Vectors: ...

    def delete(self, bucket: str, key: str) -> None: ...

    def keys(self, bucket: str, prefix: str) -> list[str]: ...


class SyncedObjects(Protocol):
    """Object storage a stack's sync reads source definitions from and writes synced files to."""

    def read(self, bucket: str, key: str) -> bytes: ...

    def write_bytes(
        self, bucket: str, key: str, data: bytes, *, metadata: Mapping[str, str]
    ) -> None: ...

    def write_json(self, bucket: str, key: str, value: object) -> None: ...

    def delete(self, bucket: str, key: str) -> None: ...

    def keys(self, bucket: str, prefix: str) -> list[str]: ...

    def create_json(self, bucket: str, key: str, value: object) -> str | None:
        """Write `value` only if `key` has no object: its ETag, or None if one exists."""
        ...

    def read_tagged(self, bucket: str, key: str) -> tuple[bytes, str]:
        """The object's bytes and its ETag."""
        ...

    def replace_json(self, bucket: str, key: str, value: object, *, etag: str) -> str | None:
        """Write `value` only if the object is still the one tagged `etag`: the new ETag, or
        None if it changed or is gone."""
        ...

    def delete_if(self, bucket: str, key: str, *, etag: str) -> bool:
        """Delete the object only if it is still the one tagged `etag`."""
        ...


class Secrets(Protocol):
    """Where a stack keeps the credentials its sources sync with (Secrets Manager)."""

    def secret(self, name: str) -> str:
        """The secret's text, or SecretError saying why it cannot be read."""
        ...


class Registry(DocumentCatalog, Protocol):
    """The cloud's catalog as the pipeline writes it: conditional writes that order concurrent
    runs (an older S3 event never overwrites a newer one's claim)."""

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


class PageStore(Protocol):
    """The text of each page as conversion extracted it, kept per document version (the
    embedded index locally, the artifacts bucket in the cloud)."""

    def stored_pages(self, doc_id: str, version: str) -> list[Page] | None:
        """The pages kept for this version of the document; None when none were kept."""
        ...


class PageKeeper(PageStore, Protocol):
    """A page store local ingestion writes (the SQLite file): the pages of a content version
    are kept before its record names it, and dropped when no record names it any more."""

    def keep_pages(self, version: str, pages: Sequence[Page]) -> None: ...
