"""Local mode: the embedded SQLite index and the local embedder in one data directory, and the
guarded app `docchat serve` runs (`uvicorn --factory docchat.wiring.local:local_app`).

Local mode requires no setting: every one has a default that serves `.docchat` on loopback.
`open_local` opens a data directory as the index's two ports (ports.DocumentCatalog and
ports.ChunkStore). With DOCCHAT_OPENSEARCH_ENDPOINT set, the chunks are that cluster's (the
cloud's adapter, OpenSearchIndex), and the SQLite file keeps the records, the page text, the
notes and the sentence vectors the reranker embedded; ingest/shelf.py writes the two in order.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from docchat.adapters.local_embedder import LocalEmbedder
from docchat.adapters.local_files import LocalFiles
from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.adapters.sqlite_usage import SqliteUsage
from docchat.answer.backend import ChatBackend
from docchat.config import Settings
from docchat.ingest import claims
from docchat.ingest.shelf import Shelf
from docchat.ingest.uploads import LocalUploads
from docchat.models import DocumentRecord
from docchat.ports import ChunkStore, DocumentCatalog, Embedder
from docchat.search.library import Library
from docchat.wiring import agent_config, chat_model, chunk_notes, rerank_off, reranker

# The CLI imports this module for every command: the web app (FastAPI) only where it is served.
if TYPE_CHECKING:
    from fastapi import FastAPI

    from docchat.serve.access import UsersFile
    from docchat.serve.app import UploadsFactory


def local_embedder(settings: Settings) -> LocalEmbedder:
    return LocalEmbedder(batch_size=settings.embed_batch_size, threads=settings.embed_threads)


def open_index(settings: Settings, embedder: Embedder) -> SqliteIndex:
    """The data directory's index file, which must have been built with `embedder`'s model."""
    return SqliteIndex(
        settings.index_path, embedding_model=embedder.model_id, dimension=embedder.dimension
    )


@dataclass(frozen=True)
class Local:
    """A data directory, opened: its SQLite file, and the index's two ports over it (or, with
    DOCCHAT_OPENSEARCH_ENDPOINT, the catalog over it and the chunks in the cluster)."""

    file: SqliteIndex
    catalog: DocumentCatalog
    chunks: ChunkStore
    embedder: Embedder

    @property
    def shelf(self) -> Shelf:
        """Where local ingestion writes: the two ports, and the page text in the file."""
        return Shelf(catalog=self.catalog, chunks=self.chunks, pages=self.file)

    def close(self) -> None:
        """Close the file (flushing what was written, where writable)."""
        self.file.close()


def open_local(settings: Settings, embedder: Embedder | None = None) -> Local:
    """The index of `settings.data_dir` as its two ports, searched with `embedder` (default:
    the local embedder); the chunks in the OpenSearch cluster of DOCCHAT_OPENSEARCH_ENDPOINT
    when it is set."""
    embedder = embedder or local_embedder(settings)
    file = open_index(settings, embedder)
    if not settings.opensearch_endpoint:
        return Local(file=file, catalog=file, chunks=file, embedder=embedder)
    try:
        cluster = cluster_chunks(settings, embedder)
    except BaseException:
        file.close()
        raise
    return Local(file=file, catalog=file, chunks=cluster, embedder=embedder)


def cluster_chunks(settings: Settings, embedder: Embedder) -> ChunkStore:
    """The OpenSearch index of DOCCHAT_OPENSEARCH_ENDPOINT for `embedder`'s vectors."""
    from docchat.adapters.opensearch_index import OpenSearchIndex, client_for

    client = client_for(
        settings.opensearch_endpoint, region=settings.region, service=settings.opensearch_service
    )
    return OpenSearchIndex(
        client=client,
        embedding_model=embedder.model_id,
        dimension=embedder.dimension,
        serverless=settings.opensearch_service == "aoss",
        index_prefix=settings.index_prefix,
        endpoint=settings.opensearch_endpoint,
    )


@dataclass(frozen=True)
class ListingWork:
    """A data directory's catalog that lists, beside its records, each new document another
    process (`docchat ingest`) is ingesting into it, at its stage (ingest/claims.py): a
    document has no record until it is indexed, and the page showed nothing for minutes."""

    catalog: DocumentCatalog
    data_dir: Path

    @property
    def read_only(self) -> bool:
        return self.catalog.read_only

    def documents(self) -> list[DocumentRecord]:
        return claims.with_work(self.catalog.documents(), claims.in_progress(self.data_dir))

    def document(self, doc_id: str) -> DocumentRecord | None:
        return self.catalog.document(doc_id)

    def unfinished(self) -> list[DocumentRecord]:
        return self.catalog.unfinished()

    def indexed_version(self, version: str) -> DocumentRecord | None:
        return self.catalog.indexed_version(version)

    def revision(self) -> int | None:
        return self.catalog.revision()

    def set_record(self, record: DocumentRecord) -> None:
        self.catalog.set_record(record)

    def forget(self, doc_id: str) -> None:
        self.catalog.forget(doc_id)


def as_served(settings: Settings, local: Local | None = None) -> Local:
    """`local` (default: `settings.data_dir` opened) as `docchat serve` shows it: its catalog
    lists the documents `docchat ingest` is working on (`ListingWork`)."""
    local = local or open_local(settings)
    return dataclasses.replace(local, catalog=ListingWork(local.catalog, settings.data_dir))


def local_library(settings: Settings, local: Local | None = None) -> Library:
    """The library over `local` (default: `settings.data_dir` opened)."""
    local = local or open_local(settings)
    return Library(
        index=local.chunks,
        embedder=local.embedder,
        registry=local.catalog,
        reranker=reranker(settings, local.embedder, store=local.file),
        rerank_off=rerank_off(settings),
        candidates=settings.candidates,
        fusion=settings.fusion,
        vector_weight=settings.vector_weight,
        page_store=local.file,
    )


def local_backend(settings: Settings, local: Local | None = None) -> ChatBackend:
    """The library over `local` (default: `settings.data_dir` opened) answered by the
    configured model (extractive when none is)."""
    return ChatBackend(
        library=local_library(settings, local),
        model=chat_model(settings),
        config=agent_config(settings, index_sleeps=False),
    )


def local_uploads(settings: Settings, local: Local) -> LocalUploads:
    """Direct uploads into `settings.data_dir`, indexed onto `local`'s shelf (its file also
    keeps the model-written notes, with DOCCHAT_CHUNK_CONTEXT=model)."""
    return LocalUploads(
        shelf=local.shelf,
        embedder=local.embedder,
        settings=settings,
        notes=chunk_notes(settings, local.file),
    )


def served_local(settings: Settings) -> tuple[Callable[[], ChatBackend], UploadsFactory]:
    """The backend and the uploads of `docchat serve` over `settings.data_dir`, opened once
    (on first use) for both."""
    opened: list[Local] = []

    def local() -> Local:
        if not opened:
            opened.append(as_served(settings))
        return opened[0]

    return (lambda: local_backend(settings, local())), (lambda _: local_uploads(settings, local()))


def local_conversations(settings: Settings) -> SqliteConversations:
    """The data directory's saved conversations (conversations.sqlite3, beside the index)."""
    return SqliteConversations(settings.conversations_path)


def local_app() -> FastAPI:
    """The app over the local data directory (the factory `docchat serve` runs in uvicorn)."""
    settings = Settings.from_env(os.environ)
    backend, uploads = served_local(settings)
    return guarded_local_app(settings, backend, uploads=uploads)


def guarded_local_app(
    settings: Settings,
    backend: Callable[[], ChatBackend],
    *,
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
    uploads: UploadsFactory | None = None,
    users: UsersFile | None = None,
) -> FastAPI:
    """The app over the local data directory behind the local server's guards (`LocalGuard`):
    settings' allowed hosts plus `allowed_hosts`, and `token` (default: settings.api_token).
    Uploads go into the data directory (`uploads` replaces how, for tests), and so do saved
    conversations, all of the one local user; with `users` (`docchat serve --users`), of the
    user whose token a request sends, who sees only their collections."""
    from starlette.middleware import Middleware

    from docchat.serve.access import local_admin
    from docchat.serve.app import create_app
    from docchat.serve.guards import LocalGuard
    from docchat.sources.store import sources_health

    guard = Middleware(
        LocalGuard,
        allowed_hosts=[*settings.allowed_host_names, *allowed_hosts],
        token=settings.api_token if token is None else token,
        users=users,
    )
    return create_app(
        backend,
        uploads=uploads or (lambda _: local_uploads(settings, as_served(settings))),
        conversations=lambda: local_conversations(settings),
        usage=lambda: SqliteUsage(settings.usage_path),
        files=lambda _: LocalFiles(settings.synced_files),
        sources=lambda: sources_health(settings.data_dir),
        middleware=[guard],
        access_of=local_admin if users is None else users.access_of,
    )
