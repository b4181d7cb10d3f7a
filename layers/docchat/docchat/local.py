"""Wiring for local mode: the embedded index and the local embedder in one data directory."""

from __future__ import annotations

from docchat.adapters.local_embedder import LocalEmbedder
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.embed import Embedder


def local_embedder(settings: Settings) -> Embedder:
    return LocalEmbedder(batch_size=settings.embed_batch_size)


def open_index(settings: Settings, embedder: Embedder) -> SqliteIndex:
    """The data directory's index, which must have been built with `embedder`'s model."""
    return SqliteIndex(
        settings.index_path, embedding_model=embedder.model_id, dimension=embedder.dimension
    )
