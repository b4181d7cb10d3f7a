"""The OpenSearch index: k-NN (faiss HNSW, inner product) and BM25 over chunks, via opensearch-py.

One adapter serves managed domains and Serverless vector collections. Serverless accepts no
custom `_id` and has no `_delete_by_query`, so there chunks get server-made ids, and stale or
duplicated chunks are found with a search and removed with bulk deletes by `_id`. Every
transport failure becomes `SearchIndexUnavailableError` (retry later) or `SearchIndexError`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import boto3
import numpy as np
from opensearchpy import ConnectionError as OpenSearchConnectionError
from opensearchpy import (
    ConnectionTimeout,
    NotFoundError,
    OpenSearch,
    RequestError,
    SSLError,
    TransportError,
    Urllib3AWSV4SignerAuth,
    Urllib3HttpConnection,
)

from docchat.errors import (
    ConfigError,
    EmbedderMismatchError,
    SearchIndexError,
    SearchIndexNotReadyError,
    SearchIndexUnavailableError,
)
from docchat.models import Chunk
from docchat.ports import Vectors

logger = logging.getLogger(__name__)

#: Statuses worth retrying later: throttling and a gateway or node that is briefly away.
RETRYABLE_STATUSES = (429, 502, 503, 504)
#: Fields of a chunk as stored in `_source`, next to `vector`.
CHUNK_FIELDS = (
    "chunk_id",
    "doc_id",
    "version",
    "source",
    "title",
    "headings",
    "page_start",
    "page_end",
    "page_breaks",
    "page_labels",
    "text",
    "embedding_model",
)
#: BM25 reads a chunk with its context (`Chunk.embed_text`: file name, title, heading path,
#: text) from this field; `text` stays the page text that is shown and quoted.
CONTEXTUAL_FIELD = "contextual_text"
#: Fields of the BM25 query, boosted with `^` (multi_match, best_fields: the best field's score;
#: https://docs.opensearch.org/3.5/query-dsl/full-text/multi-match). `text` still finds the
#: chunks written before CONTEXTUAL_FIELD existed, which lack it until their file is ingested
#: again.
KEYWORD_FIELDS = [CONTEXTUAL_FIELD, "text", "title^2", "headings^3"]
_ENGLISH = {"type": "text", "analyzer": "english"}
_LABELS = {"type": "keyword", "index": False, "doc_values": False}
_PREFIX = re.compile(r"[a-z0-9][a-z0-9_-]*")
_MAX_INDEX_NAME = 255
_MAX_RESULT_WINDOW = 10_000
_REASON_CHARS = 300
_SERVICES = ("aoss", "es")
#: Seconds each request may take: a collection waking from zero answers after 10-30 s.
REQUEST_TIMEOUT_S = 60
#: How long a search waits for a waking index, and its first and longest pause between tries.
WAKE_S = 60.0
_FIRST_PAUSE_S = 0.5
_MAX_PAUSE_S = 8.0
_MIN_ATTEMPT_S = 1.0
#: `_scope_filters` for a search no chunk can pass.
_NOTHING: list[dict[str, Any]] = [{"match_none": {}}]


def index_body(dimension: int) -> dict[str, Any]:
    """Settings and mapping of a chunk index whose vectors have `dimension` components."""
    english = _ENGLISH
    keyword = {"type": "keyword"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    # Embeddings are L2-normalised, so inner product ranks like cosine.
                    "method": {"name": "hnsw", "engine": "faiss", "space_type": "innerproduct"},
                },
                "text": english,
                CONTEXTUAL_FIELD: english,
                "title": english,
                "headings": english,
                "chunk_id": keyword,
                "doc_id": keyword,
                "version": keyword,
                "source": keyword,
                "embedding_model": keyword,
                "page_start": {"type": "integer"},
                "page_end": {"type": "integer"},
                # Kept in _source to map quotes to pages; never searched or sorted on.
                "page_breaks": {"type": "integer", "index": False, "doc_values": False},
                # A non-PDF document's page labels ("Slide 3: Results"), for citations.
                "page_labels": _LABELS,
            },
        },
    }


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
        if max_bulk_bytes <= 0 or not 1 <= page_size <= _MAX_RESULT_WINDOW:
            raise ConfigError(
                f"max_bulk_bytes ({max_bulk_bytes}) must be positive and page_size "
                f"({page_size}) between 1 and {_MAX_RESULT_WINDOW}"
            )
        if not _PREFIX.fullmatch(index_prefix):
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
        self._index_name = _index_name(index_prefix, embedding_model, dimension)
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
        with _writing(f"creating index {self.index_name}", serverless=self.serverless):
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
                body={"properties": {CONTEXTUAL_FIELD: _ENGLISH, "page_labels": _LABELS}},
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
            (chunk.chunk_id, self._action(chunk) + _ndjson(self._document(chunk, vector)))
            for chunk, vector in zip(chunks, matrix, strict=True)
        ]
        for batch in _batches(entries, max_bytes=self.max_bulk_bytes):
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
        filters = _scope_filters(doc_ids, versions)
        if k <= 0 or filters == _NOTHING:
            return []
        knn: dict[str, Any] = {"vector": vector.tolist(), "k": k}
        if filters:
            # Efficient k-NN filtering (faiss, OpenSearch >= 2.9): the k found all pass it.
            # https://docs.opensearch.org/docs/vector-search/filter-search-knn/efficient-knn-filtering
            knn["filter"] = filters[0] if len(filters) == 1 else {"bool": {"filter": filters}}
        body = {"size": k, "_source": ["chunk_id"], "query": {"knn": {"vector": knn}}}
        return _ranked(self._search_patiently(body, action="searching by vector"))

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
        filters = _scope_filters(doc_ids, versions)
        if k <= 0 or not query.strip() or filters == _NOTHING:
            return []
        match = {
            "multi_match": {
                "query": query,
                "fields": KEYWORD_FIELDS,
                "type": "best_fields",
            }
        }
        bool_query: dict[str, Any] = {"must": [match]}
        if filters:
            bool_query["filter"] = filters
        body = {"size": k, "_source": ["chunk_id"], "query": {"bool": bool_query}}
        return _ranked(self._search_patiently(body, action="searching by keywords"))

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id (a search on chunk_id: Serverless `_id`s are not chunk ids)."""
        wanted = list(dict.fromkeys(chunk_ids))
        found: dict[str, Chunk] = {}
        # Room for a few Serverless duplicates per chunk within one result window.
        step = _MAX_RESULT_WINDOW // 4
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
        return _ndjson({"index": target})

    def _document(self, chunk: Chunk, vector: Vectors) -> dict[str, Any]:
        if chunk.embedding_model not in ("", self.embedding_model):
            raise EmbedderMismatchError(
                f"chunk {chunk.chunk_id} was embedded with {chunk.embedding_model}; index "
                f"{self.index_name} holds {self.embedding_model}: embed it again"
            )
        document = chunk.model_dump(include=set(CHUNK_FIELDS))
        if not chunk.page_labels:  # a PDF's chunk stays as it was
            document.pop("page_labels")
        document["embedding_model"] = self.embedding_model
        document[CONTEXTUAL_FIELD] = chunk.embed_text
        document["vector"] = vector.tolist()
        return document

    def _bulk(self, batch: list[tuple[str, str]], *, action: str) -> None:
        """Send one bulk request; `batch` holds (label for messages, NDJSON lines) pairs."""
        body = "".join(lines for _, lines in batch)
        with _writing(action, serverless=self.serverless):
            response = self._client.bulk(index=self.index_name, body=body)
        _check_bulk(response, [label for label, _ in batch], action=action)

    def _delete_ids(self, ids: Sequence[str], *, action: str) -> None:
        entries = [(_id, _ndjson({"delete": {"_id": _id}})) for _id in ids]
        for batch in _batches(entries, max_bytes=self.max_bulk_bytes):
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
            raise _item_error(str(failures[0].get("id", "a chunk")), failures[0], action=action)
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
        with _translated(action):
            try:
                response: dict[str, Any] = call()
            except NotFoundError as exc:
                if exc.error == "index_not_found_exception":
                    return None
                raise
        return response


def client_for(endpoint: str, *, region: str, service: str) -> OpenSearch:
    """A client for `endpoint`: SigV4-signed HTTPS (service "aoss" or "es"), or plain http://."""
    url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(
            f"OpenSearch endpoint {endpoint!r} is not a URL: give https://<host> "
            "(or http://127.0.0.1:9200 for a local cluster)"
        )
    # A request may wait out a waking collection; a timed-out one is not repeated here, where
    # it would take as long again (and Serverless bulk writes are not idempotent): searches
    # retry within their own deadline, ingestion steps in the state machine.
    options: dict[str, Any] = {
        "connection_class": Urllib3HttpConnection,
        "timeout": REQUEST_TIMEOUT_S,
        "max_retries": 3,
        "retry_on_status": RETRYABLE_STATUSES,
        "retry_on_timeout": False,
    }
    if url.scheme == "http":
        return OpenSearch(hosts=[{"host": url.hostname, "port": url.port or 9200}], **options)
    if service not in _SERVICES:
        raise ConfigError(
            f"OpenSearch service {service!r} is unknown: use 'aoss' for Serverless "
            "collections or 'es' for managed domains"
        )
    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise ConfigError(
            "no AWS credentials to sign OpenSearch requests: run with a role, or set "
            "AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
        )
    return OpenSearch(
        hosts=[{"host": url.hostname, "port": url.port or 443}],
        http_auth=Urllib3AWSV4SignerAuth(credentials, region, service),
        use_ssl=True,
        verify_certs=True,
        **options,
    )


def _index_name(prefix: str, model: str, dimension: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    name = f"{prefix}-{slug}-{dimension}"
    if not slug or len(name.encode()) > _MAX_INDEX_NAME:
        raise ConfigError(
            f"embedding model {model!r} gives no usable index name ({name!r}): "
            "use a model id with letters or digits, and a shorter index prefix"
        )
    return name


def _ndjson(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def _batches(
    entries: Sequence[tuple[str, str]], *, max_bytes: int
) -> Iterator[list[tuple[str, str]]]:
    """Consecutive entries whose NDJSON adds up to at most `max_bytes` (one alone may exceed)."""
    batch: list[tuple[str, str]] = []
    size = 0
    for entry in entries:
        length = len(entry[1].encode())
        if batch and size + length > max_bytes:
            yield batch
            batch, size = [], 0
        batch.append(entry)
        size += length
    if batch:
        yield batch


def _scope_filters(
    doc_ids: Sequence[str] | None, versions: Mapping[str, str] | None
) -> list[dict[str, Any]]:
    """Term filters keeping the chunks of `doc_ids`, and of `versions` (doc_id -> version).

    No filter: every chunk; `_NOTHING`: none can pass. Two documents at one version (the same
    bytes under two names) let through each other's chunks of it: the library checks each
    chunk's pair again, and this keeps the filter two `terms` lists, not a clause per document.
    """
    if versions is None:
        if doc_ids is None:
            return []
        return [{"terms": {"doc_id": list(doc_ids)}}] if doc_ids else _NOTHING
    wanted = None if doc_ids is None else set(doc_ids)
    allowed = {d: v for d, v in versions.items() if wanted is None or d in wanted}
    if not allowed:
        return _NOTHING
    return [
        {"terms": {"doc_id": list(allowed)}},
        {"terms": {"version": list(dict.fromkeys(allowed.values()))}},
    ]


def _ranked(hits: Sequence[dict[str, Any]]) -> list[tuple[str, float]]:
    """(chunk id, score) in hit order, each chunk once (Serverless may hold duplicates)."""
    ranked: dict[str, float] = {}
    for hit in hits:
        ranked.setdefault(hit["_source"]["chunk_id"], float(hit["_score"]))
    return list(ranked.items())


def _check_bulk(response: dict[str, Any], labels: Sequence[str], *, action: str) -> None:
    """Raise for the failed items of a bulk response; a delete of a missing doc is no failure."""
    if not response.get("errors"):
        return
    failed: list[tuple[str, dict[str, Any]]] = []
    for label, entry in zip(labels, response.get("items", []), strict=False):
        for operation, item in entry.items():
            missing = operation == "delete" and item.get("status") == 404
            if "error" in item and not missing:
                failed.append((label, item))
    if not failed:
        return
    retryable = [item for _, item in failed if _retryable(item.get("status"))]
    if retryable:
        raise SearchIndexUnavailableError(
            f"OpenSearch refused {len(retryable)} of {len(labels)} items while {action} "
            f"(status {retryable[0].get('status')}): it is overloaded, retry later"
        )
    label, item = failed[0]
    raise _item_error(label, item, action=action, failures=len(failed))


def _item_error(
    label: str, item: dict[str, Any], *, action: str, failures: int = 1
) -> SearchIndexError:
    status = item.get("status")
    cause = item.get("error") or item.get("cause") or {}
    kind, reason = _describe(cause)
    message = (
        f"OpenSearch refused {label} while {action} ({failures} failed; status {status}, "
        f"{kind}: {reason})"
    )
    if _retryable(status):
        return SearchIndexUnavailableError(f"{message}: retry later")
    return SearchIndexError(f"{message}: check the index mapping against the chunk, then retry")


def _retryable(status: Any) -> bool:
    return isinstance(status, int) and (status == 429 or status >= 500)


def _describe(error: Any) -> tuple[str, str]:
    """An error's type and its reason, cut short: reasons can quote field values."""
    if isinstance(error, dict):
        kind, reason = str(error.get("type", "error")), str(error.get("reason", ""))
    else:
        kind, reason = "error", str(error)
    if len(reason) > _REASON_CHARS:
        reason = reason[:_REASON_CHARS] + "..."
    return kind, reason


@contextmanager
def _writing(action: str, *, serverless: bool) -> Iterator[None]:
    """`_translated` for writes: on OpenSearch Serverless a refusal (403) right after the stack
    made the collection is its data access policy not yet in effect (policies take minutes),
    so it is `SearchIndexNotReadyError`, which the Index step retries for minutes; the message
    still says what to grant if it never takes effect."""
    try:
        with _translated(action):
            yield
    except SearchIndexError as exc:
        cause = exc.__cause__
        denied = isinstance(cause, TransportError) and cause.status_code == 403
        if not (serverless and denied):
            raise
        raise SearchIndexNotReadyError(
            f"{exc}. A collection's data access policy takes a few minutes to apply after it "
            "is made; an existing collection (ExistingOpenSearchEndpoint) needs one that "
            "grants the stack's roles (its output SearchIndexRoleArns) aoss:CreateIndex, "
            "aoss:DescribeIndex, aoss:UpdateIndex, aoss:ReadDocument and aoss:WriteDocument "
            "on index/<collection>/*"
        ) from cause


@contextmanager
def _translated(action: str) -> Iterator[None]:
    """Turn opensearch-py errors into docchat's search-index errors that say what to do."""
    try:
        yield
    except ConnectionTimeout as exc:
        raise SearchIndexUnavailableError(
            f"OpenSearch did not answer in time while {action}: retry later, and check the "
            "cluster's load if it keeps happening"
        ) from exc
    except SSLError as exc:
        raise SearchIndexError(
            f"TLS with OpenSearch failed while {action} ({exc.info}): check the endpoint "
            "host name and that it serves a trusted certificate"
        ) from exc
    except OpenSearchConnectionError as exc:
        raise SearchIndexUnavailableError(
            f"could not reach OpenSearch while {action} ({exc.info}): check the endpoint URL "
            "and network access (VPC, security groups), then retry"
        ) from exc
    except TransportError as exc:
        raise _status_error(exc, action) from exc


def _status_error(exc: TransportError, action: str) -> SearchIndexError:
    status = exc.status_code
    info = exc.info.get("error", exc.error) if isinstance(exc.info, dict) else exc.error
    kind, reason = _describe(info)
    if status in RETRYABLE_STATUSES:
        return SearchIndexUnavailableError(
            f"OpenSearch is overloaded or unavailable ({status} {kind}) while {action}: retry later"
        )
    if status in (401, 403):
        return SearchIndexError(
            f"OpenSearch denied access ({status}) while {action}: allow this role in the "
            "collection's data access policy (Serverless) or the domain's access policy, "
            "and sign for the right service ('aoss' or 'es')"
        )
    if status == 413:
        return SearchIndexError(
            f"OpenSearch refused a request as too large while {action}: lower max_bulk_bytes"
        )
    return SearchIndexError(
        f"OpenSearch failed while {action} ({status} {kind}: {reason}): check the index "
        "name and mapping, or create the index again"
    )
