"""`OpenSearchIndex`: the ChunkStore port over one OpenSearch index. It keeps no records (the
registry does), no sentence vectors and no notes (see ports.ChunkStore)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from opensearchpy import NotFoundError, OpenSearch, RequestError, TransportError

from docchat.adapters.opensearch_index.bulk import batches, ndjson
from docchat.adapters.opensearch_index.failures import (
    RETRYABLE_STATUSES,
    check_bulk,
    item_error,
    translated,
    writing,
)
from docchat.adapters.opensearch_index.mapping import (
    CHUNK_FIELDS,
    CONTEXTUAL_FIELD,
    ENGLISH,
    LABELS,
    VALID_PREFIX,
    index_body,
    index_name_for,
)
from docchat.adapters.opensearch_index.queries import (
    MAX_RESULT_WINDOW,
    NOTHING,
    keyword_query,
    knn_query,
    ranked,
    scope_filters,
)
from docchat.errors import ConfigError, EmbedderMismatchError, SearchIndexUnavailableError
from docchat.ingest.decision import copy_chunk
from docchat.models import Chunk, DocumentRecord
from docchat.ports import SentenceVectors, Vectors

logger = logging.getLogger(__name__)

#: How long a search waits for a waking index, and its first and longest pause between tries.
WAKE_S = 60.0
_FIRST_PAUSE_S = 0.5
_MAX_PAUSE_S = 8.0
_MIN_ATTEMPT_S = 1.0


class OpenSearchIndex:
    """Chunks and vectors of one embedding model in one OpenSearch index (domain or Serverless)."""

    def __init__(
        self,
        *,
        client: OpenSearch,
        embedding_model: str,
        dimension: int,
        serverless: bool,
        index_prefix: str = "docchat-chunks",
        endpoint: str = "",
        max_bulk_bytes: int = 5_000_000,
        page_size: int = 1000,
        wake_s: float = WAKE_S,
        wake_pause_s: float = _FIRST_PAUSE_S,
    ) -> None:
        if not 1 <= dimension <= 16_000:
            raise ConfigError(f"vector dimension ({dimension}) must be between 1 and 16000")
        if max_bulk_bytes <= 0 or not 1 <= page_size <= MAX_RESULT_WINDOW:
            raise ConfigError(
                f"max_bulk_bytes ({max_bulk_bytes}) must be positive and page_size "
                f"({page_size}) between 1 and {MAX_RESULT_WINDOW}"
            )
        if not VALID_PREFIX.fullmatch(index_prefix):
            raise ConfigError(
                f"index prefix {index_prefix!r} is not a valid OpenSearch index name: use "
                "lower-case letters, digits, '-' and '_', starting with a letter or digit"
            )
        self.embedding_model = embedding_model
        self.dimension = dimension
        self.serverless = serverless
        self.max_bulk_bytes = max_bulk_bytes
        self.page_size = page_size
        self.wake_s = wake_s
        self.wake_pause_s = wake_pause_s
        self._client = client
        self._index_name = index_name_for(index_prefix, embedding_model, dimension)
        self._endpoint = endpoint
        self._index_ready = False

    @property
    def index_name(self) -> str:
        """The index for this model and dimension, so vectors of other sizes never mix."""
        return self._index_name

    @property
    def location(self) -> str:
        """Which index of which cluster this is: a document indexed elsewhere (another
        collection, another embedding model) is not indexed here."""
        return f"{self._endpoint}/{self._index_name}"

    # --- writing -----------------------------------------------------------------------------

    def ensure_index(self) -> None:
        """Create the index with its k-NN and BM25 mapping unless it exists already; an index
        made before chunks carried their contextual text gets that field added."""
        with writing(f"creating index {self.index_name}", serverless=self.serverless):
            if not self._client.indices.exists(index=self.index_name):
                try:
                    self._client.indices.create(
                        index=self.index_name, body=index_body(self.dimension)
                    )
                    self._index_ready = True
                    return
                except RequestError as exc:
                    # Another worker created it between our check and our request.
                    if exc.error != "resource_already_exists_exception":
                        raise
            # The mapping is strict: a new field must be mapped before a chunk carries it.
            # Mapping a field again the same way changes nothing, so this is safe to repeat.
            # https://docs.opensearch.org/2.13/api-reference/index-apis/put-mapping
            self._client.indices.put_mapping(
                index=self.index_name,
                body={
                    "properties": {
                        CONTEXTUAL_FIELD: ENGLISH,
                        "page_labels": LABELS,
                        "file_name": LABELS,
                    }
                },
            )
        self._index_ready = True

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        """Index chunks with their vectors, in bulk requests of at most `max_bulk_bytes`."""
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if not chunks:
            return
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != self.dimension:
            raise EmbedderMismatchError(
                f"vectors have shape {matrix.shape}; index {self.index_name} holds "
                f"{self.dimension} dims: embed with {self.embedding_model}"
            )
        if not self._index_ready:
            self.ensure_index()
        entries = [
            (chunk.chunk_id, self._action(chunk) + ndjson(self._document(chunk, vector)))
            for chunk, vector in zip(chunks, matrix, strict=True)
        ]
        for batch in batches(entries, max_bytes=self.max_bulk_bytes):
            self._bulk(batch, action=f"writing chunks of {chunks[0].doc_id}")

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]:
        """Remove the document's chunks of every other version, and duplicates of this one."""
        action = f"removing stale chunks of {doc_id}"
        if self.serverless:
            old, duplicates = self._stale_ids(doc_id, keep=version, action=action)
            self._delete_ids(old + duplicates, action=action)
            counts = {"old": len(old), "duplicates": len(duplicates)}
        else:
            # Domain ids are chunk ids, so a retried write overwrote instead of duplicating.
            query = {
                "bool": {
                    "filter": [{"term": {"doc_id": doc_id}}],
                    "must_not": [{"term": {"version": version}}],
                }
            }
            counts = {"old": self._delete_by_query(query, action=action), "duplicates": 0}
        logger.info("stale chunks removed", extra={"doc_id": doc_id, **counts})
        return counts

    def delete_document(self, doc_id: str) -> int:
        """Remove every chunk of a document, all versions; how many were removed."""
        action = f"deleting chunks of {doc_id}"
        if self.serverless:
            ids = [hit["_id"] for hit in self._hits_of(doc_id, action=action)]
            self._delete_ids(ids, action=action)
            deleted = len(ids)
        else:
            deleted = self._delete_by_query({"term": {"doc_id": doc_id}}, action=action)
        logger.info("document chunks deleted", extra={"doc_id": doc_id, "deleted": deleted})
        return deleted

    def copy_document(self, from_doc_id: str, record: DocumentRecord) -> int:
        """Write copies of the chunks and vectors of `from_doc_id` at `record.version` as
        `record`'s (the same bytes under another name), embedding nothing, then remove any
        other chunks `record`'s document had; how many were copied."""
        chunks, vectors = self.document_vectors(from_doc_id, record.version)
        copies = [copy_chunk(chunk, from_doc_id, record) for chunk in chunks]
        self.write_chunks(copies, vectors)
        self.finalize_document(record.doc_id, record.version)
        return len(copies)

    def count(self, doc_id: str | None = None) -> int:
        """How many chunks the index holds, of one document or of all."""
        body = None if doc_id is None else {"query": {"term": {"doc_id": doc_id}}}
        response = self._read(
            "counting chunks", lambda: self._client.count(index=self.index_name, body=body)
        )
        return 0 if response is None else int(response["count"])

    # --- searching ---------------------------------------------------------------------------

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """Approximate k-NN top-k as (chunk id, score), best first; filtered in-search."""
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        if vector.shape[0] != self.dimension:
            raise EmbedderMismatchError(
                f"the query vector has {vector.shape[0]} dims; index {self.index_name} holds "
                f"{self.dimension}: embed the query with {self.embedding_model}"
            )
        filters = scope_filters(doc_ids, versions)
        if k <= 0 or filters == NOTHING:
            return []
        body = knn_query(vector.tolist(), k=k, filters=filters)
        return ranked(self._search_patiently(body, action="searching by vector"))

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 top-k over the contextual text (and text, title and headings) as (chunk id,
        score), best first."""
        filters = scope_filters(doc_ids, versions)
        if k <= 0 or not query.strip() or filters == NOTHING:
            return []
        body = keyword_query(query, k=k, filters=filters)
        return ranked(self._search_patiently(body, action="searching by keywords"))

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id (a search on chunk_id: Serverless `_id`s are not chunk ids)."""
        wanted = list(dict.fromkeys(chunk_ids))
        found: dict[str, Chunk] = {}
        # Room for a few Serverless duplicates per chunk within one result window.
        step = MAX_RESULT_WINDOW // 4
        for start in range(0, len(wanted), step):
            batch = wanted[start : start + step]
            body = {
                "size": 4 * len(batch),
                "_source": list(CHUNK_FIELDS),
                "query": {"terms": {"chunk_id": batch}},
            }
            for hit in self._search_patiently(body, action="reading chunks"):
                source = hit["_source"]
                found.setdefault(source["chunk_id"], Chunk.model_validate(source))
        return found

    def document_chunks(self, doc_id: str, *, version: str | None = None) -> list[Chunk]:
        """A document's chunks in reading order (chunk ids end in their ordinal), of one
        version when `version` is given."""
        ids = {
            hit["_source"]["chunk_id"]
            for hit in self._hits_of(doc_id, action="reading pages")
            if version is None or hit["_source"]["version"] == version
        }
        found = self.chunks(sorted(ids))
        return [found[i] for i in sorted(found)]

    def document_vectors(self, doc_id: str, version: str) -> tuple[list[Chunk], Vectors]:
        """A document's chunks of `version` in reading order, with the vectors stored with
        them: a copy under another name is written from these, embedding nothing."""
        chunks = self.document_chunks(doc_id, version=version)
        ids = [chunk.chunk_id for chunk in chunks]
        found: dict[str, list[float]] = {}
        step = MAX_RESULT_WINDOW // 4
        for start in range(0, len(ids), step):
            body = {
                "size": 4 * len(ids[start : start + step]),
                "_source": ["chunk_id", "vector"],
                "query": {"terms": {"chunk_id": ids[start : start + step]}},
            }
            for hit in self._search_patiently(body, action="reading vectors"):
                found.setdefault(hit["_source"]["chunk_id"], hit["_source"]["vector"])
        vectors = np.asarray([found[i] for i in ids], dtype=np.float32)
        return chunks, vectors.reshape(len(ids), self.dimension)

    # --- kept per chunk: nothing here ---------------------------------------------------------

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, SentenceVectors]:
        return {}

    def save_sentence_vectors(self, found: Mapping[str, SentenceVectors]) -> None:
        return None

    def notes(self, keys: Sequence[str]) -> dict[str, str]:
        return {}

    def save_notes(self, notes: Mapping[str, str]) -> None:
        return None

    def _search_patiently(self, body: dict[str, Any], *, action: str) -> list[dict[str, Any]]:
        """The hits of a search, waiting out an index that is waking up.

        A NextGen Serverless collection scaled to zero answers its first request after 10-30 s
        (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-scale-to-zero.html):
        an attempt may take the whole `wake_s`, and a busy answer (429, 502-504) is retried with
        growing pauses until `wake_s` is spent. An endpoint that cannot be reached at all is
        misconfigured, not waking: that fails at once.
        """
        deadline = time.monotonic() + self.wake_s
        pause = self.wake_pause_s
        while True:
            try:
                return self._search_once(body, action=action, until=deadline)
            except SearchIndexUnavailableError as exc:
                left = deadline - time.monotonic()
                cause = exc.__cause__
                busy = isinstance(cause, TransportError) and cause.status_code in RETRYABLE_STATUSES
                if left <= 0 or not busy:
                    raise
            time.sleep(min(pause, left))
            pause = min(2 * pause, _MAX_PAUSE_S)

    def _search_once(
        self, body: dict[str, Any], *, action: str, until: float
    ) -> list[dict[str, Any]]:
        timeout = max(until - time.monotonic(), _MIN_ATTEMPT_S)
        response = self._read(
            action,
            lambda: self._client.search(index=self.index_name, body=body, request_timeout=timeout),
        )
        return [] if response is None else list(response["hits"]["hits"])

    # --- plumbing ----------------------------------------------------------------------------

    def _action(self, chunk: Chunk) -> str:
        # Serverless vector collections refuse a custom _id; elsewhere it makes retries idempotent.
        target = {} if self.serverless else {"_id": chunk.chunk_id}
        return ndjson({"index": target})

    def _document(self, chunk: Chunk, vector: Vectors) -> dict[str, Any]:
        if chunk.embedding_model not in ("", self.embedding_model):
            raise EmbedderMismatchError(
                f"chunk {chunk.chunk_id} was embedded with {chunk.embedding_model}; index "
                f"{self.index_name} holds {self.embedding_model}: embed it again"
            )
        document = chunk.model_dump(include=set(CHUNK_FIELDS))
        for empty in ("page_labels", "file_name"):
            if not document[empty]:  # a PDF's chunk under its own name stays as it was
                document.pop(empty)
        document["embedding_model"] = self.embedding_model
        document[CONTEXTUAL_FIELD] = chunk.embed_text
        document["vector"] = vector.tolist()
        return document

    def _bulk(self, batch: list[tuple[str, str]], *, action: str) -> None:
        """Send one bulk request; `batch` holds (label for messages, NDJSON lines) pairs."""
        body = "".join(lines for _, lines in batch)
        with writing(action, serverless=self.serverless):
            response = self._client.bulk(index=self.index_name, body=body)
        check_bulk(response, [label for label, _ in batch], action=action)

    def _delete_ids(self, ids: Sequence[str], *, action: str) -> None:
        entries = [(_id, ndjson({"delete": {"_id": _id}})) for _id in ids]
        for batch in batches(entries, max_bytes=self.max_bulk_bytes):
            self._bulk(batch, action=action)

    def _delete_by_query(self, query: dict[str, Any], *, action: str) -> int:
        response = self._read(
            action,
            lambda: self._client.delete_by_query(
                index=self.index_name, body={"query": query}, conflicts="proceed", refresh=True
            ),
        )
        if response is None:
            return 0
        failures = response.get("failures") or []
        if failures:
            raise item_error(str(failures[0].get("id", "a chunk")), failures[0], action=action)
        return int(response.get("deleted", 0))

    def _stale_ids(self, doc_id: str, *, keep: str, action: str) -> tuple[list[str], list[str]]:
        """`_id`s of the document's chunks of other versions, and of extra copies of `keep`'s."""
        old: list[str] = []
        duplicates: list[str] = []
        seen: set[str] = set()
        for hit in self._hits_of(doc_id, action=action):
            source = hit["_source"]
            if source["version"] != keep:
                old.append(hit["_id"])
            elif source["chunk_id"] in seen:
                duplicates.append(hit["_id"])
            else:
                seen.add(source["chunk_id"])
        return old, duplicates

    def _hits_of(self, doc_id: str, *, action: str) -> Iterator[dict[str, Any]]:
        """Every hit of a document, paged by `search_after` on chunk_id.

        chunk_id is not unique on Serverless (duplicates), and sorting on `_id` needs
        fielddata, so a full page keeps back its last chunk id for the next page: no copy of a
        chunk is skipped at a page boundary (unless one chunk fills a whole page with copies).
        """
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": self.page_size,
                "_source": ["chunk_id", "version"],
                "query": {"term": {"doc_id": doc_id}},
                "sort": [{"chunk_id": "asc"}],
                "track_total_hits": False,
            }
            if after is not None:
                body["search_after"] = after
            hits = self._search(body, action=action)
            if len(hits) < self.page_size:
                yield from hits
                return
            complete = [hit for hit in hits if hit["sort"] != hits[-1]["sort"]] or hits
            yield from complete
            after = complete[-1]["sort"]

    def _search(self, body: dict[str, Any], *, action: str) -> list[dict[str, Any]]:
        response = self._read(action, lambda: self._client.search(index=self.index_name, body=body))
        return [] if response is None else list(response["hits"]["hits"])

    def _read(self, action: str, call: Callable[[], Any]) -> dict[str, Any] | None:
        """The response of `call`, or None when the index does not exist (nothing ingested)."""
        with translated(action):
            try:
                response: dict[str, Any] = call()
            except NotFoundError as exc:
                if exc.error == "index_not_found_exception":
                    return None
                raise
        return response
