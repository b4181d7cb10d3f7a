"""Local mode: the embedded SQLite index and the local embedder in one data directory, and the
guarded app `docchat serve` runs (`uvicorn --factory docchat.wiring.local:local_app`).

Local mode requires no setting: every one has a default that serves `.docchat` on loopback.
`open_local` opens a data directory as the index's two ports (ports.DocumentCatalog and
ports.ChunkStore). With DOCCHAT_OPENSEARCH_ENDPOINT set, `docchat serve` keeps chunks in that
cluster instead of the SQLite index (docchat.adapters.cluster_index), which keeps records and
page text.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from docchat.adapters.local_embedder import LocalEmbedder
from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.backend import ChatBackend
from docchat.config import Settings
from docchat.ingest import claims
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
    DOCCHAT_OPENSEARCH_ENDPOINT, over it and the cluster, which holds the chunks)."""

    file: SqliteIndex
    catalog: DocumentCatalog
    chunks: ChunkStore
    embedder: Embedder

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
    from docchat.adapters.cluster_index import ClusterIndex, cluster_chunks

    try:
        cluster = cluster_chunks(
            settings, embedding_model=embedder.model_id, dimension=embedder.dimension
        )
    except BaseException:
        file.close()
        raise
    # The records stay in the file (the catalog); the chunks' writes keep them in step.
    return Local(file=file, catalog=file, chunks=ClusterIndex(file, cluster), embedder=embedder)


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
        reranker=reranker(settings, local.embedder, store=local.chunks),
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


def local_uploads(
    settings: Settings, *, index: ChunkStore, catalog: DocumentCatalog, embedder: Embedder
) -> LocalUploads:
    """Direct uploads into `settings.data_dir`, indexed into `index` and `catalog` (the store
    also keeps the model-written notes, with DOCCHAT_CHUNK_CONTEXT=model)."""
    notes = chunk_notes(settings, index)
    return LocalUploads(
        index=index, catalog=catalog, embedder=embedder, settings=settings, notes=notes
    )


def local_uploads_for(settings: Settings) -> UploadsFactory:
    """Direct uploads into `settings.data_dir`, over the local backend's own index."""

    def uploads(live: ChatBackend) -> LocalUploads:
        library = live.library
        return local_uploads(
            settings, index=library.index, catalog=library.registry, embedder=library.embedder
        )

    return uploads


def local_conversations(settings: Settings) -> SqliteConversations:
    """The data directory's saved conversations (conversations.sqlite3, beside the index)."""
    return SqliteConversations(settings.conversations_path)


def local_app() -> FastAPI:
    """The app over the local data directory (the factory `docchat serve` runs in uvicorn)."""
    settings = Settings.from_env(os.environ)
    return guarded_local_app(settings, lambda: local_backend(settings, as_served(settings)))


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

    guard = Middleware(
        LocalGuard,
        allowed_hosts=[*settings.allowed_host_names, *allowed_hosts],
        token=settings.api_token if token is None else token,
        users=users,
    )
    return create_app(
        backend,
        uploads=uploads or local_uploads_for(settings),
        conversations=lambda: local_conversations(settings),
        middleware=[guard],
        access_of=local_admin if users is None else users.access_of,
    )
