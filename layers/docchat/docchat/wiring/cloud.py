"""Cloud mode: the adapters one Lambda container uses, each made on first use and reused while
warm, and the app the chat function runs (`uvicorn --factory docchat.wiring.cloud:cloud_app`).

Each function reads the settings its view declares (docchat.processes.FUNCTIONS) and fails
with a ConfigError naming the DOCCHAT_ variables when one it cannot run without is empty. Each
adapter is built from its group of the view (`CloudServices.view`), so a function cannot build
one whose settings it does not declare. There is no fallback: an empty
DOCCHAT_OPENSEARCH_ENDPOINT is an error in a Lambda, never the embedded SQLite index (that is
local mode, docchat.wiring.local).

When "at start" is:
- An ingestion handler checks on each invocation, before it reads the event (the first one
  after a cold start is where a missing setting shows): the invocation fails with ConfigError,
  and Step Functions hands MarkFailed that name, which records the code `config` and the message
  on the document. Checking when the module is imported would read the environment at import
  and fail the Lambda's init phase, where the message reaches only the function's log.
- The chat function checks in `cloud_app`, the factory uvicorn calls as the process starts,
  before it listens. A missing setting stops the process with the ConfigError in the function's
  log, so the Web Adapter never sees the app ready and no request is answered. That is chosen
  over serving errors from a running app: without its index and registry the function can
  answer nothing useful, and a deployment that cannot become ready fails where it is deployed
  (the stack's post-deploy check), not later on a user's question. `/ready` itself stays
  trivial: it touches no dependency.
"""

from __future__ import annotations

import os
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from docchat.config import Settings
from docchat.processes import (
    FUNCTIONS,
    Aws,
    ChatSettings,
    ChunkSettings,
    Declared,
    Documents,
    Embedding,
    ModelChoice,
    SearchIndex,
)
from docchat.wiring import agent_config, chat_model, notes_model, rerank_off, reranker

# The adapters (and with them boto3, opensearch-py, numpy) are imported where they are made, on
# first use: a cold start pays only for what it touches. The web app (FastAPI) is imported only
# by cloud_app: the ingestion Lambdas' packages do not have it. Types are checked all the same.
if TYPE_CHECKING:
    from fastapi import FastAPI

    from docchat.adapters.bedrock_embedder import CohereEmbedder, TitanEmbedder
    from docchat.adapters.bedrock_models import BedrockModelLifecycle
    from docchat.adapters.dynamodb_conversations import DynamoConversations
    from docchat.adapters.dynamodb_registry import DynamoRegistry
    from docchat.adapters.local_embedder import LocalEmbedder
    from docchat.adapters.opensearch_index import OpenSearchIndex
    from docchat.adapters.s3_objects import S3Objects
    from docchat.adapters.s3_uploads import S3Files, S3Uploads
    from docchat.adapters.secrets_manager import SecretsManagerSecrets
    from docchat.adapters.step_functions import StepFunctionsExecutions
    from docchat.answer.backend import ChatBackend
    from docchat.ingest.pagetext import S3PageStore
    from docchat.ports import ChatModel, Registry, Reranker
    from docchat.serve.state import SignIn

    Embedders = LocalEmbedder | TitanEmbedder | CohereEmbedder

Group = TypeVar("Group", bound=Declared)


class CloudServices:
    """The adapters one Lambda container uses, from the settings its function declares; tests
    replace attributes with their own."""

    def __init__(self, settings: Declared) -> None:
        self.settings = settings

    def view(self, group: type[Group]) -> Group:
        """The settings as `group` (one adapter's, or a function's), which they must include."""
        if not isinstance(self.settings, group):
            raise TypeError(
                f"{type(self.settings).__name__} does not declare the settings of {group.__name__}"
                " (docchat.processes): add the group to the function's view"
            )
        return self.settings

    @cached_property
    def objects(self) -> S3Objects:
        import boto3

        from docchat.adapters.s3_objects import S3Objects

        return S3Objects(boto3.client("s3", region_name=self.view(Aws).region or None))

    @cached_property
    def registry(self) -> DynamoRegistry:
        import boto3

        from docchat.adapters.dynamodb_registry import DynamoRegistry

        settings = self.view(Documents)
        dynamodb = boto3.resource("dynamodb", region_name=settings.region or None)
        return DynamoRegistry(dynamodb.Table(settings.documents_table))

    @cached_property
    def executions(self) -> StepFunctionsExecutions:
        """The ingestion runs, for the watchdog to ask why one stopped."""
        import boto3

        from docchat.adapters.step_functions import StepFunctionsExecutions

        return StepFunctionsExecutions(
            boto3.client("stepfunctions", region_name=self.view(Aws).region or None)
        )

    @cached_property
    def secrets(self) -> SecretsManagerSecrets:
        """The credentials the stack's sources sync with, read by name."""
        import boto3

        from docchat.adapters.secrets_manager import SecretsManagerSecrets

        return SecretsManagerSecrets(
            boto3.client("secretsmanager", region_name=self.view(Aws).region or None)
        )

    @cached_property
    def conversations(self) -> DynamoConversations:
        """Each signed-in user's saved conversations (the chat function's table)."""
        import boto3

        from docchat.adapters.dynamodb_conversations import DynamoConversations

        settings = self.view(ChatSettings)
        dynamodb = boto3.resource("dynamodb", region_name=settings.region or None)
        return DynamoConversations(dynamodb.Table(settings.conversations_table))

    @cached_property
    def embedder(self) -> Embedders:
        settings = self.view(Embedding)
        if settings.embedder == "local":
            from docchat.adapters.local_embedder import LocalEmbedder

            return LocalEmbedder(
                batch_size=settings.embed_batch_size, threads=settings.embed_threads
            )
        from docchat.adapters.bedrock_embedder import embedder_for

        return embedder_for(
            settings.embedder,
            model_id=settings.embed_model_id or None,
            dimension=settings.embed_dimension if settings.embedder == "titan" else None,
            concurrency=settings.embed_concurrency,
            region=settings.region or None,
        )

    @cached_property
    def index(self) -> OpenSearchIndex:
        """The OpenSearch index of the configured endpoint (required: no SQLite fallback)."""
        from docchat.adapters.opensearch_index import OpenSearchIndex, client_for

        settings = self.view(SearchIndex)
        embedder = self.embedder
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
            endpoint=settings.opensearch_endpoint,
        )

    @cached_property
    def reranker(self) -> Reranker | None:
        return reranker(self.view(ChatSettings), self.embedder)

    @cached_property
    def model(self) -> ChatModel | None:
        return chat_model(self.view(ModelChoice))

    @cached_property
    def notes_model(self) -> ChatModel | None:
        """The model that writes each chunk's note in the Chunk step."""
        return notes_model(self.view(ChunkSettings))

    @cached_property
    def page_store(self) -> S3PageStore | None:
        """The page text the Convert step keeps in the artifacts bucket; None without one
        (GET /documents/{id}/pages/{n} then says the text was not kept)."""
        bucket = self.view(ChatSettings).artifacts_bucket
        if not bucket:
            return None
        from docchat.ingest.pagetext import S3PageStore

        return S3PageStore(self.objects, bucket)

    @cached_property
    def backend(self) -> ChatBackend:
        """The chat side: OpenSearch, Bedrock embeddings, the registry, rerank and Claude."""
        from docchat.answer.backend import ChatBackend
        from docchat.search.library import Library

        settings = self.view(ChatSettings)
        library = Library(
            index=self.index,
            embedder=self.embedder,
            registry=self.registry,
            reranker=self.reranker,
            rerank_off=rerank_off(settings),
            candidates=settings.candidates,
            fusion=settings.fusion,
            vector_weight=settings.vector_weight,
            page_store=self.page_store,
        )
        return ChatBackend(
            library=library,
            model=self.model,
            config=agent_config(settings, index_sleeps=settings.opensearch_service == "aoss"),
        )


@cache
def services(function: str) -> CloudServices:
    """The services of `function` (functions/<name>, or "chat"), built from the settings it
    declares on its first invocation; a ConfigError, raised again on each invocation, while one
    it cannot run without is empty."""
    declared = FUNCTIONS[function].from_env(os.environ, reader=f"the {function} function")
    return CloudServices(declared)


def s3_uploads(*, bucket: str, region: str, registry: Registry) -> S3Uploads:
    """Presigned uploads with SigV4 on the bucket's regional endpoint, as browsers need."""
    import boto3
    from botocore.config import Config

    from docchat.adapters.s3_uploads import S3Uploads

    client = boto3.client(
        "s3",
        region_name=region or None,
        config=Config(signature_version="s3v4", s3={"addressing_style": "virtual"}),
    )
    return S3Uploads(client=client, bucket=bucket, registry=registry)


def s3_files(*, bucket: str, region: str, registry: Registry | None = None) -> S3Files:
    """Presigned GETs for the page's viewer, signed like the uploads' PUTs (`registry`: where
    a synced document's object is)."""
    import boto3
    from botocore.config import Config

    from docchat.adapters.s3_uploads import S3Files

    client = boto3.client(
        "s3",
        region_name=region or None,
        config=Config(signature_version="s3v4", s3={"addressing_style": "virtual"}),
    )
    return S3Files(client=client, bucket=bucket, registry=registry)


def bedrock_client(region: str) -> Any:
    """Bedrock's control plane (GetFoundationModel), for the chat model's lifecycle."""
    import boto3

    return boto3.client("bedrock", region_name=region or None)


def model_lifecycle(live: CloudServices) -> BedrockModelLifecycle | None:
    """What Bedrock says of the chat model (ACTIVE or LEGACY) for /health, when it is Claude
    on Bedrock; asked on the first /health, never at start or by /ready."""
    settings = live.view(ModelChoice)
    if settings.chat_provider != "bedrock":
        return None
    from docchat.adapters.bedrock_models import BedrockModelLifecycle

    def model_id() -> str:
        return live.model.model_id if live.model else ""

    return BedrockModelLifecycle(client=lambda: bedrock_client(settings.region), model_id=model_id)


def sign_in(settings: ChatSettings) -> SignIn:
    """How the page signs in. SignIn reads a full Settings: it gets one holding only the
    sign-in fields of the chat function's view (the rest at their defaults)."""
    from docchat.serve.state import SignIn

    fields = ("region", "api_auth", "auth_domain", "auth_client_id", "auth_user_pool_id")
    return SignIn.from_settings(Settings.model_validate(settings.model_dump(include=set(fields))))


def cloud_app() -> FastAPI:
    """The app the chat Lambda runs; its settings are checked here, as the process starts."""
    from docchat.adapters.emf_usage import EmfUsage
    from docchat.errors import NotOfferedError
    from docchat.serve.access import GroupsSource, cognito_access_for
    from docchat.serve.app import create_app
    from docchat.serve.identity import cloud_user_for

    live = services("chat")
    settings = live.view(ChatSettings)

    def bucket(use: str) -> str:
        if not settings.documents_bucket:
            raise NotOfferedError(
                f"{use} off: set DOCCHAT_DOCUMENTS_BUCKET to the documents bucket"
            )
        return settings.documents_bucket

    def uploads(_: ChatBackend) -> S3Uploads:
        return s3_uploads(
            bucket=bucket("uploads are"), region=settings.region, registry=live.registry
        )

    def files(_: ChatBackend) -> S3Files:
        return s3_files(
            bucket=bucket("the viewer is"), region=settings.region, registry=live.registry
        )

    def page_origins() -> list[str]:
        """The documents bucket, where the page PUTs uploads and its viewer GETs PDFs."""
        if not settings.documents_bucket:
            return []
        return [s3_files(bucket=settings.documents_bucket, region=settings.region).origin]

    # Who is asking (the authorizer's claims), and which collections they may read: data in
    # the artifacts bucket (docchat.serve.access).
    groups = GroupsSource(lambda: live.objects, settings.artifacts_bucket)

    def sources() -> dict[str, Any]:
        """The stack's sources and their last syncs, for an admin's /health."""
        from docchat.sources.stack import stack_sources_health

        return stack_sources_health(live.objects, settings.artifacts_bucket)

    return create_app(
        lambda: live.backend,
        uploads=uploads,
        files=files,
        sign_in=lambda: sign_in(settings),
        conversations=lambda: live.conversations,
        usage=EmfUsage,
        page_origins=page_origins,
        access_of=cognito_access_for(groups.mapping, cloud_user_for(settings.api_auth)),
        model_lifecycle=model_lifecycle(live),
        sources=sources if settings.artifacts_bucket else None,
    )
