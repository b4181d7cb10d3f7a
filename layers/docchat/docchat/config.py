"""Settings from the environment, in one place; validated when a process starts, never at import.

The CLI reads the whole `Settings`; each cloud function reads its view of it (docchat.processes).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from docchat.errors import ConfigError

PREFIX = "DOCCHAT_"


#: What a Lambda function's own process keeps beside a conversion child (Python, pypdfium2,
#: numpy, boto3: about 300 MiB resident), in MiB.
FUNCTION_HEADROOM_MIB = 512

# The settings' choices, named once for `Settings` and the processes' views (docchat.processes).
OcrMode = Literal["local", "cloud", "off"]
Fusion = Literal["rank", "score"]
ApiAuth = Literal["NONE", "IAM", "COGNITO"]


def provider_in_force(model_provider: str, anthropic_api_key: str) -> str:
    """The model provider in force: explicit, or `anthropic` when a key is configured."""
    if model_provider:
        return model_provider
    return "anthropic" if anthropic_api_key else "none"


class Settings(BaseModel):
    """Every setting is read from `DOCCHAT_<NAME>`; docs/configuration.md documents each one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path = Field(Path(".docchat"), description="local data directory")
    embedder: str = Field("local", pattern="^(local|titan|cohere)$", description="embedding model")
    embed_model_id: str = Field("", description="Bedrock model id; empty: the embedder's default")
    embed_dimension: int = Field(1024, description="Titan output dimension (256, 512 or 1024)")
    embed_concurrency: int = Field(
        8, ge=1, le=64, description="concurrent Bedrock calls per Lambda"
    )
    # The tuned numbers live here only (domain functions take them without defaults). Chunking
    # and fusion come from `bench/eval_sweep.py` (docs/performance.md, "Retrieval quality"): on
    # the 809 BEIR SciFact train queries, min-max score fusion with cosine weight 0.45 over 100
    # candidates a side beat reciprocal-rank fusion by 2.8 nDCG@10 points; on COVID-QA
    # 1,500/200 chunks put the answer in the top 5 most often.
    chunk_size: int = Field(1500, ge=100, le=8000, description="characters per chunk")
    chunk_overlap: int = Field(200, ge=0, description="characters shared by adjacent chunks")
    embed_batch_size: int = Field(32, ge=1, le=512, description="texts per embedding call")
    embed_threads: int = Field(
        0, ge=0, le=256, description="cores one local embedding call may use (0: all)"
    )
    max_pages: int = Field(5000, ge=1, description="PDFs with more pages are refused")
    convert_timeout_s: float = Field(
        300.0, gt=0, description="time budget for one PDF's conversion"
    )
    convert_memory_mib: int = Field(
        2048, ge=256, description="memory one PDF's conversion may take (a child process)"
    )
    # The DPI comes from `bench/ocr.py` (docs/performance.md, "OCR").
    # `cloud`: the Convert Lambda has no OCR engine (it does not fit a zip function with the
    # docchat layer); the state machine's OCR step, a container-image Lambda, reads the pages.
    ocr: OcrMode = Field(
        "local",
        description=(
            "OCR of pages without a text layer: local (rapidocr in process), cloud (the state "
            "machine's OCR step; local runs OCR in process) or off"
        ),
    )
    ocr_dpi: int = Field(150, ge=50, le=600, description="resolution pages are OCR'd at")
    ocr_pages_per_task: int = Field(
        8, ge=1, le=100, description="pages one invocation of the cloud OCR step reads"
    )
    top_k: int = Field(5, ge=1, le=50, description="passages an answer draws on")
    candidates: int = Field(
        100, ge=1, le=1000, description="k-NN and BM25 candidates before fusion"
    )
    fusion: Fusion = Field("score", description="score or rank fusion")
    vector_weight: float = Field(
        0.45, ge=0, le=1, description="weight of the vector score in score fusion"
    )
    # `bench/extractive_answers.py threshold`: the highest that still answers 99 % of the
    # COVID-QA tune half's questions (99.5 %; it refuses 65 % of them asked over the demo PDFs);
    # on the test half it answers 99.1 % and refuses 68.9 %.
    answer_threshold: float = Field(
        0.25,
        ge=0,
        le=1,
        description="share of a question's words a passage must hold for an extractive answer",
    )
    # How an extractive answer scores a sentence beside the question's words it holds
    # (docchat.answer.extractive.QuoteWeights): chosen on the questions of the COVID-QA tune half
    # with bench/extractive_answers.py (`similarity` for the cosine's weight); docs/performance.md
    # ("Retrieval quality") reports the test half.
    quote_similarity_weight: float = Field(
        2.0,
        ge=0,
        le=10,
        description="extractive answers: weight of a sentence's cosine with the question",
    )
    quote_heading_weight: float = Field(
        0.6,
        ge=0,
        le=10,
        description="extractive answers: weight of question words only in a passage's headings",
    )
    quote_rank_weight: float = Field(
        0.3, ge=0, le=10, description="extractive answers: weight of the passage's rank"
    )
    quote_phrase_weight: float = Field(
        0.2,
        ge=0,
        le=10,
        description="extractive answers: weight of the question's word pairs in order",
    )
    quote_opening_weight: float = Field(
        0.15,
        ge=0,
        le=10,
        description="extractive answers: credit for opening with two question words",
    )
    quote_section_weight: float = Field(
        0.3,
        ge=0,
        le=10,
        description="extractive answers: credit for opening the section the question names",
    )
    quote_number_bonus: float = Field(
        0.15,
        ge=0,
        le=10,
        description="extractive answers: credit for a number when the question asks for one",
    )
    quote_diversity: float = Field(
        0.6,
        ge=0,
        le=10,
        description="extractive answers: discount for overlap with a quote already chosen",
    )
    # Chat
    model_provider: str = Field(
        "",
        pattern="^(|none|anthropic|bedrock|openai)$",
        description="none, anthropic, bedrock or openai (any OpenAI-compatible server)",
    )
    model_id: str = Field(
        "",
        description="model id; empty: Claude's default (openai: required, the server's model name)",
    )
    anthropic_api_key: str = Field("", description="Anthropic API key (or ANTHROPIC_API_KEY)")
    openai_base_url: str = Field(
        "",
        description="API root of the OpenAI-compatible server, e.g. http://localhost:11434/v1",
    )
    openai_api_key: str = Field(
        "", description="its API key, sent as a bearer token; empty for servers that need none"
    )
    chunk_context: str = Field(
        "off",
        pattern="^(off|model)$",
        description="model: at ingestion the chat model writes one sentence situating each "
        "chunk in its document, embedded and searched with it (cached per chunk)",
    )
    system_prompt: str = Field("", description="replaces the built-in system prompt")
    prices_file: str = Field(
        "",
        description="JSON file of model prices (USD per million tokens) replacing or adding to "
        "the list prices an answer's cost is worked out with (docs/api.md)",
    )
    max_rounds: int = Field(4, ge=1, le=10, description="model turns per answer")
    max_tokens: int = Field(1024, ge=64, le=8192, description="answer length limit in tokens")
    reranker: str = Field(
        "sentences",
        pattern="^(none|sentences|bedrock)$",
        description="what reorders the fused passages: sentences (each passage's best "
        "sentence, with the embedder), bedrock (a Bedrock rerank model) or none",
    )
    # `bench/eval_sweep.py rerank` on SciFact train and COVID-QA tune (docs/performance.md,
    # "Retrieval quality").
    sentence_weight: float = Field(
        1.5, ge=0, le=10, description="weight of the best sentence's score when reranking"
    )
    sentence_words: float = Field(
        0.5, ge=0, le=10, description="weight of the query's words in a sentence's score"
    )
    rerank_model_id: str = Field("cohere.rerank-v3-5:0", description="Bedrock rerank model")
    # Cloud pipeline
    region: str = Field("", description="AWS region (AWS_REGION in Lambda)")
    documents_table: str = Field("", description="DynamoDB table of document status")
    conversations_table: str = Field(
        "", description="DynamoDB table of saved conversations (the chat function's)"
    )
    documents_bucket: str = Field("", description="bucket the page's uploads go to (presigned PUT)")
    artifacts_bucket: str = Field("", description="bucket for intermediate files")
    artifacts_prefix: str = Field("artifacts/", description="prefix of intermediate files")
    opensearch_endpoint: str = Field(
        "", description="OpenSearch URL; the Lambdas require it (local mode: embedded SQLite)"
    )
    opensearch_service: str = Field("aoss", pattern="^(aoss|es)$", description="aoss or es")
    index_prefix: str = Field("docchat-chunks", description="OpenSearch index name prefix")
    chunks_per_batch: int = Field(64, ge=1, le=1000, description="chunks per embed/index batch")
    stale_after_s: int = Field(
        3600, ge=60, description="an unfinished ingestion older than this is restarted"
    )
    # Local server (`docchat serve`)
    api_token: str = Field(
        "", description="bearer token `docchat serve` requires; needed to bind beyond loopback"
    )
    allowed_hosts: str = Field(
        "", description="Host names `docchat serve` answers besides loopback (comma-separated)"
    )
    web_url: str = Field(
        "http://127.0.0.1:8000/",
        description="the chat page's address: links in MCP results open cited pages there",
    )
    # Sign-in for the page (the cloud stack sets these on the chat function)
    api_auth: ApiAuth = Field(
        "NONE", description="how API Gateway authenticates callers: NONE, IAM or COGNITO"
    )
    auth_domain: str = Field(
        "", description="https URL of the Cognito managed-login domain (with COGNITO)"
    )
    auth_client_id: str = Field("", description="the page's Cognito app client id (with COGNITO)")
    auth_user_pool_id: str = Field(
        "", description="the Cognito user pool that issues the API's tokens (with COGNITO)"
    )

    @field_validator("api_auth", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _sign_in_complete(self) -> Settings:
        if self.api_auth == "COGNITO" and not (self.auth_domain and self.auth_client_id):
            raise ValueError(
                "COGNITO sign-in needs DOCCHAT_AUTH_DOMAIN and DOCCHAT_AUTH_CLIENT_ID "
                "(the stack sets both on the chat function)"
            )
        if self.auth_domain and not self.auth_domain.startswith("https://"):
            raise ValueError(f"DOCCHAT_AUTH_DOMAIN must be an https URL, not {self.auth_domain!r}")
        return self

    @field_validator("web_url")
    @classmethod
    def _web_address(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"must be an http(s) URL of the chat page, not {url!r}")
        return url

    @model_validator(mode="after")
    def _openai_complete(self) -> Settings:
        if self.model_provider != "openai":
            return self
        if not self.openai_base_url:
            raise ValueError(
                "the openai provider needs DOCCHAT_OPENAI_BASE_URL, the server's API root "
                "(e.g. http://localhost:11434/v1 for Ollama)"
            )
        if not self.openai_base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"DOCCHAT_OPENAI_BASE_URL must be an http(s) URL, not {self.openai_base_url!r}"
            )
        if not self.model_id:
            raise ValueError(
                "the openai provider needs DOCCHAT_MODEL_ID, the model name the server knows "
                "(e.g. qwen3:8b for Ollama)"
            )
        return self

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Settings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk overlap ({self.chunk_overlap}) must be smaller than "
                f"the chunk size ({self.chunk_size})"
            )
        return self

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: object) -> Settings:
        """Settings from `DOCCHAT_*` variables; `overrides` (e.g. CLI flags) win."""
        values: dict[str, object] = {
            name: environ[PREFIX + name.upper()]
            for name in cls.model_fields
            if PREFIX + name.upper() in environ
        }
        if "region" not in values and environ.get("AWS_REGION"):
            values["region"] = environ["AWS_REGION"]
        function_memory = environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
        if "convert_memory_mib" not in values and function_memory.isdigit():
            # In Lambda the conversion child shares the function's memory with its parent: cap it
            # below, so that a flood of memory ends as PdfTooLargeError in the child, not as the
            # whole function killed (Runtime.ExitError) and retried.
            values["convert_memory_mib"] = max(
                256,
                min(
                    cls.model_fields["convert_memory_mib"].default,
                    int(function_memory) - FUNCTION_HEADROOM_MIB,
                ),
            )
        if "anthropic_api_key" not in values and environ.get("ANTHROPIC_API_KEY"):
            values["anthropic_api_key"] = environ["ANTHROPIC_API_KEY"]
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{PREFIX}{'.'.join(map(str, e['loc'])).upper() or 'SETTINGS'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ConfigError(f"invalid configuration: {problems}") from exc

    @property
    def chat_provider(self) -> str:
        """The model provider in force: explicit, or `anthropic` when a key is configured."""
        return provider_in_force(self.model_provider, self.anthropic_api_key)

    @property
    def allowed_host_names(self) -> list[str]:
        return [h.strip() for h in self.allowed_hosts.split(",") if h.strip()]

    @property
    def index_path(self) -> Path:
        return self.data_dir / "index.sqlite3"

    @property
    def conversations_path(self) -> Path:
        return self.data_dir / "conversations.sqlite3"

    @property
    def synced_files(self) -> Path:
        """The PDFs `docchat sync` fetched, kept for the viewer (docchat.sources.sync)."""
        return self.data_dir / "synced"

    @property
    def usage_path(self) -> Path:
        """What each answer used (adapters/sqlite_usage.py; `docchat usage`)."""
        return self.data_dir / "usage.sqlite3"
