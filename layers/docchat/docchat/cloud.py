"""Wiring for the Lambdas: settings and adapters, each made on first use and reused while warm."""

from __future__ import annotations

import os
from functools import cache, cached_property
from typing import Any

from docchat.config import Settings
from docchat.embed import Embedder
from docchat.errors import ConfigError


class CloudServices:
    """The adapters one Lambda container uses; tests replace attributes with their own."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def _require(self, *names: str) -> None:
        missing = [n for n in names if not getattr(self.settings, n)]
        if missing:
            variables = ", ".join(f"DOCCHAT_{n.upper()}" for n in missing)
            raise ConfigError(f"set {variables} (the stack sets it for every function)")

    @cached_property
    def objects(self) -> Any:
        import boto3

        from docchat.adapters.s3_objects import S3Objects

        return S3Objects(boto3.client("s3", region_name=self.settings.region or None))

    @cached_property
    def registry(self) -> Any:
        import boto3

        from docchat.adapters.dynamodb_registry import DynamoRegistry

        self._require("documents_table")
        dynamodb = boto3.resource("dynamodb", region_name=self.settings.region or None)
        return DynamoRegistry(dynamodb.Table(self.settings.documents_table))

    @cached_property
    def embedder(self) -> Embedder:
        settings = self.settings
        if settings.embedder == "local":
            from docchat.local import local_embedder

            return local_embedder(settings)
        from docchat.adapters.bedrock_embedder import embedder_for

        return embedder_for(
            settings.embedder,
            model_id=settings.embed_model_id or None,
            dimension=settings.embed_dimension if settings.embedder == "titan" else None,
            concurrency=settings.embed_concurrency,
            region=settings.region or None,
        )

    @cached_property
    def index(self) -> Any:
        """OpenSearch when an endpoint is configured, else the embedded SQLite index."""
        settings = self.settings
        embedder = self.embedder
        if not settings.opensearch_endpoint:
            from docchat.local import open_index

            return open_index(settings, embedder)
        from docchat.adapters.opensearch_index import OpenSearchIndex, client_for

        client = client_for(
            settings.opensearch_endpoint,
            region=settings.region,
            service=settings.opensearch_service,
        )
        # No request here: writes create the index when they need it and searches read a
        # missing one as empty, so a cold chat Lambda reaches OpenSearch only on its first
        # search, where the agent can announce a waking collection.
        return OpenSearchIndex(
            client=client,
            embedding_model=embedder.model_id,
            dimension=embedder.dimension,
            serverless=settings.opensearch_service == "aoss",
            index_prefix=settings.index_prefix,
        )

    @cached_property
    def page_store(self) -> Any:
        """The pages the Convert step kept in the artifacts bucket; without one, those the
        embedded index keeps, if that is the index."""
        if self.settings.artifacts_bucket:
            from docchat.pagetext import S3PageStore

            return S3PageStore(self.objects, self.settings.artifacts_bucket)
        return None if self.settings.opensearch_endpoint else self.index

    @cached_property
    def backend(self) -> Any:
        """The chat side: OpenSearch, Bedrock embeddings, the registry, rerank and Claude."""
        from docchat.backend import ChatBackend, agent_config, chat_model
        from docchat.library import Library

        settings = self.settings
        reranker = None
        if settings.reranker == "bedrock":
            from docchat.adapters.bedrock_reranker import BedrockReranker

            reranker = BedrockReranker(
                model_id=settings.rerank_model_id, region=settings.region or None
            )
        library = Library(
            index=self.index,
            embedder=self.embedder,
            registry=self.registry,
            reranker=reranker,
            candidates=settings.candidates,
            fusion=settings.fusion,
            vector_weight=settings.vector_weight,
            page_store=self.page_store,
        )
        return ChatBackend(
            library=library, model=chat_model(settings), config=agent_config(settings)
        )


@cache
def services() -> CloudServices:
    """This container's services, built from the environment on the first invocation."""
    return CloudServices(Settings.from_env(os.environ))
