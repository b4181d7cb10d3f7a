"""Local mode: the embedded SQLite index and the local embedder in one data directory, and the
guarded app `docchat serve` runs (`uvicorn --factory docchat.wiring.local:local_app`).

Local mode requires no setting: every one has a default that serves `.docchat` on loopback.
With DOCCHAT_OPENSEARCH_ENDPOINT set, `docchat serve` keeps chunks in that cluster instead of
the SQLite index (docchat.adapters.cluster_index), which keeps records and page text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from docchat.adapters.local_embedder import LocalEmbedder
from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.backend import ChatBackend
from docchat.config import Settings
from docchat.ingest.uploads import LocalUploads
from docchat.ports import Embedder, SentenceStore
from docchat.search.library import Library
from docchat.wiring import agent_config, chat_model, chunk_notes, rerank_off, reranker

# The CLI imports this module for every command: the web app (FastAPI) only where it is served.
if TYPE_CHECKING:
    from fastapi import FastAPI

    from docchat.adapters.cluster_index import ClusterIndex
    from docchat.serve.access import UsersFile
    from docchat.serve.app import UploadsFactory

#: Settings `docchat serve` and the CLI cannot start without: none.
REQUIRED: tuple[str, ...] = ()


def local_embedder(settings: Settings) -> LocalEmbedder:
    return LocalEmbedder(batch_size=settings.embed_batch_size, threads=settings.embed_threads)


def open_index(settings: Settings, embedder: Embedder) -> SqliteIndex:
    """The data directory's index, which must have been built with `embedder`'s model."""
    return SqliteIndex(
        settings.index_path, embedding_model=embedder.model_id, dimension=embedder.dimension
    )


def local_library(settings: Settings) -> Library:
    """The embedded index and local embedder of `settings.data_dir`; the chunks searched in
    the OpenSearch cluster of DOCCHAT_OPENSEARCH_ENDPOINT when it is set."""
    embedder = local_embedder(settings)
    index = open_index(settings, embedder)
    chunks = None
    store: SentenceStore = index
    if settings.opensearch_endpoint:
        from docchat.adapters.cluster_index import ClusterIndex, cluster_chunks

        chunks = cluster_chunks(
            settings, embedding_model=embedder.model_id, dimension=embedder.dimension
        )
        store = ClusterIndex(index, chunks)  # sentence vectors kept by chunk id
    return Library(
        index=chunks or index,
        embedder=embedder,
        registry=index,
        reranker=reranker(settings, embedder, store=store),
        rerank_off=rerank_off(settings),
        candidates=settings.candidates,
        fusion=settings.fusion,
        vector_weight=settings.vector_weight,
        page_store=index,
    )


def local_backend(settings: Settings) -> ChatBackend:
    """The local library answered by the configured model (extractive when none is)."""
    return ChatBackend(
        library=local_library(settings),
        model=chat_model(settings),
        config=agent_config(settings, index_sleeps=False),
    )


def local_uploads(
    settings: Settings, index: SqliteIndex | ClusterIndex, embedder: Embedder
) -> LocalUploads:
    """Direct uploads into `settings.data_dir`, indexed into `index` (whose SQLite file also
    keeps the model-written notes, with DOCCHAT_CHUNK_CONTEXT=model)."""
    notes = chunk_notes(settings, index if isinstance(index, SqliteIndex) else index.records)
    return LocalUploads(index=index, embedder=embedder, settings=settings, notes=notes)


def local_uploads_for(settings: Settings) -> UploadsFactory:
    """Direct uploads into `settings.data_dir`, over the local backend's own index."""

    def uploads(live: ChatBackend) -> LocalUploads:
        return local_uploads(settings, _written(live.library), live.library.embedder)

    return uploads


def _written(library: Library) -> SqliteIndex | ClusterIndex:
    """What direct uploads write into: the library's SQLite index, or (over a cluster) its
    OpenSearch chunks with the SQLite registry."""
    from docchat.adapters.cluster_index import ClusterIndex
    from docchat.adapters.opensearch_index import OpenSearchIndex

    index, registry = library.index, library.registry
    if isinstance(index, SqliteIndex):
        return index
    if isinstance(index, OpenSearchIndex) and isinstance(registry, SqliteIndex):
        return ClusterIndex(registry, index)
    raise TypeError(f"local uploads need the SQLite index, not {type(index).__name__}")


def local_conversations(settings: Settings) -> SqliteConversations:
    """The data directory's saved conversations (conversations.sqlite3, beside the index)."""
    return SqliteConversations(settings.conversations_path)


def local_app() -> FastAPI:
    """The app over the local data directory (the factory `docchat serve` runs in uvicorn)."""
    settings = Settings.from_env(os.environ)
    return guarded_local_app(settings, lambda: local_backend(settings))


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

    from docchat.serve.access import AccessOf, local_admin
    from docchat.serve.app import create_app
    from docchat.serve.guards import LocalGuard

    guard = Middleware(
        LocalGuard,
        allowed_hosts=[*settings.allowed_host_names, *allowed_hosts],
        token=settings.api_token if token is None else token,
        users=users,
    )
    access_of: AccessOf = local_admin if users is None else users.access_of
    return create_app(
        backend,
        uploads=uploads or local_uploads_for(settings),
        conversations=lambda: local_conversations(settings),
        middleware=[guard],
        access_of=access_of,
        user_of=lambda request: access_of(request).user,
    )
