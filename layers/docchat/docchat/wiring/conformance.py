"""Each adapter, as the port it is used as: mypy --strict checks every pair here, so an adapter
whose signature drifts from its port fails `make test` (its mypy step). Nothing
calls these functions; they exist to be type-checked."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docchat.adapters.anthropic_model import ClaudeModel
    from docchat.adapters.bedrock_embedder import CohereEmbedder, TitanEmbedder
    from docchat.adapters.bedrock_reranker import BedrockReranker
    from docchat.adapters.dynamodb_conversations import DynamoConversations
    from docchat.adapters.dynamodb_registry import DynamoRegistry
    from docchat.adapters.local_embedder import LocalEmbedder
    from docchat.adapters.local_files import LocalFiles
    from docchat.adapters.openai_model import OpenAICompatibleModel
    from docchat.adapters.opensearch_index import OpenSearchIndex
    from docchat.adapters.s3_objects import S3Objects
    from docchat.adapters.s3_uploads import S3Files, S3Uploads
    from docchat.adapters.sqlite_conversations import SqliteConversations
    from docchat.adapters.sqlite_index import SqliteIndex
    from docchat.adapters.step_functions import StepFunctionsExecutions
    from docchat.ingest.pagetext import S3PageStore
    from docchat.ingest.uploads import LocalUploads
    from docchat.ports import (
        ChatModel,
        ChunkIndex,
        ChunkReader,
        ConversationStore,
        DocumentFiles,
        DocumentIndex,
        DocumentRegistry,
        Embedder,
        Executions,
        LocalIndex,
        Objects,
        PageStore,
        Registry,
        Reranker,
        Uploads,
    )


def opensearch_index(index: OpenSearchIndex) -> tuple[ChunkIndex, ChunkReader]:
    """The pipeline writes it; the chat library searches and reads it."""
    return index, index


def sqlite_index(
    index: SqliteIndex,
) -> tuple[ChunkIndex, ChunkReader, DocumentRegistry, DocumentIndex, LocalIndex]:
    """Local mode's index is its registry too, and what ingestion and direct uploads write."""
    return index, index, index, index, index


def dynamodb_registry(registry: DynamoRegistry) -> tuple[Registry, DocumentRegistry]:
    return registry, registry


def s3_objects(objects: S3Objects) -> Objects:
    return objects


def step_functions(executions: StepFunctionsExecutions) -> Executions:
    return executions


def uploads(presigned: S3Uploads, direct: LocalUploads) -> tuple[Uploads, Uploads]:
    return presigned, direct


def document_files(presigned: S3Files, local: LocalFiles) -> tuple[DocumentFiles, DocumentFiles]:
    return presigned, local


def embedders(
    local: LocalEmbedder, titan: TitanEmbedder, cohere: CohereEmbedder
) -> tuple[Embedder, Embedder, Embedder]:
    return local, titan, cohere


def reranker(bedrock: BedrockReranker) -> Reranker:
    return bedrock


def chat_models(
    claude: ClaudeModel, compatible: OpenAICompatibleModel
) -> tuple[ChatModel, ChatModel]:
    return claude, compatible


def conversations(
    local: SqliteConversations, cloud: DynamoConversations
) -> tuple[ConversationStore, ConversationStore]:
    return local, cloud


def page_stores(embedded: SqliteIndex, s3: S3PageStore) -> tuple[PageStore, PageStore]:
    """Page text: the embedded index keeps it locally, the artifacts bucket in the cloud."""
    return embedded, s3
