"""The settings each process reads: one typed view of `Settings` per Lambda step (or per steps
that read the same), one for the chat function; the CLI reads the whole `Settings`.

A view lists the fields its process reads, typed as in `Settings`, which keeps their defaults,
limits, descriptions and cross-field checks in one place. A `NonEmpty` field is one the process
cannot run without: an empty or unset variable stops it at start with a ConfigError naming the
DOCCHAT_ variable and the function. The groups below (`Documents`, `SearchIndex`, ...) are the
fields one adapter reads; docchat.wiring.cloud builds each adapter from its group, so a process
whose view lacks a group cannot build that adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from docchat.config import PREFIX, ApiAuth, Fusion, OcrMode, Settings, provider_in_force
from docchat.errors import ConfigError

#: A setting its process cannot run without: set and not empty.
NonEmpty = Annotated[str, Field(min_length=1)]


class Declared(BaseModel):
    """The settings one process reads, taken from a validated `Settings`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        unknown = sorted(set(cls.model_fields) - set(Settings.model_fields))
        if unknown:
            raise TypeError(f"{cls.__name__} declares settings Settings lacks: {unknown}")

    @classmethod
    def of(cls, settings: Settings, *, reader: str) -> Self:
        """The fields of `settings` this view declares; a ConfigError naming the DOCCHAT_
        variables `reader` (e.g. "the chunk function") needs and has empty."""
        try:
            return cls.model_validate({name: getattr(settings, name) for name in cls.model_fields})
        except ValidationError as exc:
            names = [PREFIX + str(error["loc"][0]).upper() for error in exc.errors()]
            them = "it" if len(names) == 1 else "them"
            raise ConfigError(
                f"{reader} needs {', '.join(names)}: set {them} in its environment, "
                f"as the stack does"
            ) from exc

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, reader: str) -> Self:
        """The view of `Settings.from_env(environ)`: every DOCCHAT_ variable is validated (an
        unknown one is an error) before the view keeps the ones it declares."""
        return cls.of(Settings.from_env(environ), reader=reader)

    @classmethod
    def required(cls) -> list[str]:
        """The fields the process cannot run without."""
        return [
            name
            for name, field in cls.model_fields.items()
            if any(getattr(m, "min_length", 0) for m in field.metadata)
        ]


# --- What one adapter reads ---------------------------------------------------------------------


class Aws(Declared):
    """Any AWS client."""

    region: str


class Documents(Aws):
    """The document registry (DynamoDB)."""

    documents_table: NonEmpty


class Artifacts(Aws):
    """The steps' intermediate files and the kept page text (S3)."""

    artifacts_bucket: NonEmpty
    artifacts_prefix: str


class Embedding(Aws):
    """The embedder: Bedrock's, or the local one."""

    embedder: str
    embed_model_id: str
    embed_dimension: int
    embed_concurrency: int
    embed_batch_size: int
    embed_threads: int


class SearchIndex(Embedding):
    """The OpenSearch index, whose name and mapping follow the embedder's model and dimension."""

    opensearch_endpoint: NonEmpty
    opensearch_service: str
    index_prefix: str


class ModelChoice(Aws):
    """The chat model (docchat.wiring.chat_model)."""

    model_provider: str
    model_id: str
    anthropic_api_key: str
    openai_base_url: str
    openai_api_key: str

    @property
    def chat_provider(self) -> str:
        """As `Settings.chat_provider`."""
        return provider_in_force(self.model_provider, self.anthropic_api_key)


class Conversion(Declared):
    """A document's conversion in a child process, within its limits (ingest.stages)."""

    max_pages: int
    convert_timeout_s: float
    convert_memory_mib: int
    ocr: OcrMode
    ocr_dpi: int


# --- The processes ------------------------------------------------------------------------------


class RegisterSettings(Documents, SearchIndex):
    """Register: the registry, and the index the document's chunks would be in."""

    stale_after_s: int


class ConvertSettings(Documents, Artifacts, Conversion):
    """Convert: the document's pages into the artifacts bucket; pages to OCR in ranges."""

    ocr_pages_per_task: int


class OcrSettings(Artifacts):
    """OCR: one range of pages, in a child process within the conversion's limits."""

    ocr_dpi: int
    convert_timeout_s: float
    convert_memory_mib: int


class ChunkSettings(Documents, Artifacts, ModelChoice):
    """Chunk: pages into batches of chunks, each with its model-written note when asked."""

    chunk_size: int
    chunk_overlap: int
    chunks_per_batch: int
    chunk_context: str


class EmbedSettings(Artifacts, Embedding):
    """Embed: one batch's vectors."""


class IndexSettings(Artifacts, SearchIndex):
    """Index: one embedded batch into the index."""


class CleanupSettings(Documents, Artifacts, SearchIndex):
    """Finalize, MarkFailed, Remove and the watchdog: the registry, the index's chunks and the
    artifacts of a document's versions."""


class SyncSettings(Artifacts):
    """Sync: the stack's sources (defined, and their state kept, in the artifacts bucket) into
    the documents bucket."""

    documents_bucket: NonEmpty


class ChatSettings(Documents, SearchIndex, ModelChoice):
    """The chat function: search, answers, uploads, the viewer, sign-in, saved conversations."""

    conversations_table: NonEmpty
    # Optional: uploads and the viewer are off without the documents bucket; kept page text
    # and collection access are absent without the artifacts bucket.
    documents_bucket: str
    artifacts_bucket: str
    candidates: int
    fusion: Fusion
    vector_weight: float
    reranker: str
    rerank_model_id: str
    sentence_weight: float
    sentence_words: float
    top_k: int
    system_prompt: str
    prices_file: str
    max_rounds: int
    max_tokens: int
    answer_threshold: float
    quote_similarity_weight: float
    quote_heading_weight: float
    quote_rank_weight: float
    quote_phrase_weight: float
    quote_opening_weight: float
    quote_section_weight: float
    quote_number_bonus: float
    quote_diversity: float
    api_auth: ApiAuth
    auth_domain: str
    auth_client_id: str
    auth_user_pool_id: str


#: Each Lambda function (functions/<name>) and the settings it reads.
FUNCTIONS: dict[str, type[Declared]] = {
    "register": RegisterSettings,
    "convert": ConvertSettings,
    "ocr": OcrSettings,
    "chunk": ChunkSettings,
    "embed": EmbedSettings,
    "index": IndexSettings,
    "finalize": CleanupSettings,
    "mark_failed": CleanupSettings,
    "remove": CleanupSettings,
    "watchdog": CleanupSettings,
    "sync": SyncSettings,
    "chat": ChatSettings,
}
