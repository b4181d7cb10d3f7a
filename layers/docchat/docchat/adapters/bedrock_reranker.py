"""Amazon Bedrock Rerank: reorder retrieved passages by relevance to the query.

One `bedrock-agent-runtime` `Rerank` call per search. Request and response shapes follow
botocore's service model for bedrock-agent-runtime (2023-07-26) and the Bedrock user guide
pages "Use a reranker model" and "Permissions for reranking". The boto3 client retries
(adaptive mode, briefly: a search waits on it); what still fails becomes `RerankError`, and
the caller keeps the fused order.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from docchat.errors import RerankError
from docchat.models import Chunk, Passage

RERANK_MODEL_ID = "cohere.rerank-v3-5:0"
#: Where Bedrock offers each rerank model (the user guide's "Supported Regions and models for
#: reranking", https://docs.aws.amazon.com/bedrock/latest/userguide/rerank-supported.html, read
#: 2026-11-27). Elsewhere a Rerank call fails every time: reranking is off from the start.
RERANK_REGIONS = {
    "cohere.rerank-v3-5:0": frozenset(
        {"ap-northeast-1", "ca-central-1", "eu-central-1", "us-east-1", "us-west-2"}
    ),
    "amazon.rerank-v1:0": frozenset(
        {"ap-northeast-1", "ca-central-1", "eu-central-1", "us-west-2"}
    ),
}
# The service model's limits: 1..1000 sources, each text 1..32000 characters.
MAX_SOURCES = 1000
#: The passages one billed query (search unit) holds.
SOURCES_PER_UNIT = 100
MAX_TEXT_CHARS = 32_000
# Three attempts in all (botocore's `max_attempts` would count retries only, making four).
CLIENT_CONFIG = Config(
    retries={"mode": "adaptive", "total_max_attempts": 3}, connect_timeout=5, read_timeout=10
)
THROTTLED_CODES = frozenset(
    {"ThrottlingException", "ServiceQuotaExceededException", "DependencyFailedException"}
)


def not_offered(model_id: str, region: str) -> str:
    """Why `model_id` cannot rerank in `region`, or "" when it can (or when the model or the
    Region is not one docchat knows: the call then says for itself)."""
    regions = RERANK_REGIONS.get(model_id)
    if not region or regions is None or region in regions:
        return ""
    return (
        f"reranking is off: Bedrock offers {model_id} only in {', '.join(sorted(regions))}, "
        f"not in {region}; passages keep their fused order"
    )


class BedrockReranker:
    """A Bedrock rerank model (Cohere Rerank 3.5 by default) behind a lazily created client."""

    def __init__(
        self,
        *,
        client: Any | None = None,
        model_id: str = RERANK_MODEL_ID,
        region: str | None = None,
    ) -> None:
        self.model_id = model_id
        self._client = client
        self._region = region
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The boto3 client, created on first use (once, even when threads race for it)."""
        with self._lock:
            if self._client is None:
                self._client = boto3.client(
                    "bedrock-agent-runtime", region_name=self._region, config=CLIENT_CONFIG
                )
            return self._client

    def rerank(self, query: str, passages: Sequence[Passage], *, top_n: int) -> list[Passage]:
        """The `top_n` most relevant passages, best first, each scored by the rerank model."""
        # Fused order puts the weakest candidates last, so past the service's limit they go.
        candidates = list(passages[:MAX_SOURCES])
        if not candidates or top_n < 1:
            return []
        region = self._region or "the default region"
        try:
            client = self.client
            region = client.meta.region_name
            response = client.rerank(
                **rerank_request(
                    query,
                    candidates,
                    top_n=min(top_n, len(candidates)),
                    model_arn=self.model_arn(region, partition=client.meta.partition),
                )
            )
        except ClientError as exc:
            raise self._error_for(exc, region) from exc
        except BotoCoreError as exc:
            raise RerankError(
                f"cannot call Bedrock rerank model {self.model_id} in {region}: {exc}; "
                "check the AWS credentials, region and network"
            ) from exc
        return self._ranked(response.get("results", []), candidates)[:top_n]

    def search_units(self, passages: int) -> int:
        """A query per 100 passages ("Pricing and search units",
        https://docs.aws.amazon.com/bedrock/latest/userguide/rerank-pricing.html, read
        2026-12-06: "A query is a single call to the reranker model that can contain up to 100
        document chunks"); past MAX_SOURCES the rest are not sent."""
        return -(-min(passages, MAX_SOURCES) // SOURCES_PER_UNIT)

    def similarities(self, query: str, chunks: Sequence[Chunk]) -> dict[tuple[str, int], float]:
        """None: the rerank model scores whole passages, so the extractive answer's quotes rest
        on the question's words alone."""
        return {}

    def model_arn(self, region: str, *, partition: str = "aws") -> str:
        """The foundation-model ARN Rerank wants; an ARN given as the model id is kept."""
        if self.model_id.startswith("arn:"):
            return self.model_id
        return f"arn:{partition}:bedrock:{region}::foundation-model/{self.model_id}"

    def _ranked(self, results: list[dict[str, Any]], candidates: list[Passage]) -> list[Passage]:
        ranked: list[Passage] = []
        for result in sorted(results, key=lambda r: -float(r["relevanceScore"])):
            index = int(result["index"])
            if not 0 <= index < len(candidates):
                raise RerankError(
                    f"Bedrock rerank model {self.model_id} returned index {index} for "
                    f"{len(candidates)} passages"
                )
            score = float(result["relevanceScore"])
            ranked.append(candidates[index].model_copy(update={"score": score}))
        return ranked

    def _error_for(self, exc: ClientError, region: str) -> RerankError:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "Unknown"))
        message = str(error.get("Message", ""))
        what = f"Bedrock rerank model {self.model_id} in {region} failed ({code}: {message})"
        if code == "AccessDeniedException":
            return RerankError(
                f"{what}: enable access to the model in the Bedrock console in {region}, and "
                "allow bedrock:Rerank and bedrock:InvokeModel on it to this role"
            )
        if code in ("ValidationException", "ResourceNotFoundException"):
            return RerankError(
                f"{what}: check the model id, and that {region} offers it "
                f"(Cohere Rerank 3.5: us-east-1, us-west-2, ca-central-1, eu-central-1, "
                "ap-northeast-1)"
            )
        if code in THROTTLED_CODES:
            return RerankError(f"{what} after the client's retries: it is busy, try again later")
        return RerankError(what)


def rerank_request(
    query: str, passages: Sequence[Passage], *, top_n: int, model_arn: str
) -> dict[str, Any]:
    """The Rerank parameters for ranking `passages` (title, headings and text) by `query`."""
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query[:MAX_TEXT_CHARS]}}],
        "sources": [
            {
                "type": "INLINE",
                "inlineDocumentSource": {
                    "type": "TEXT",
                    "textDocument": {"text": sendable(p.chunk.embed_text)},
                },
            }
            for p in passages
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": top_n,
                "modelConfiguration": {"modelArn": model_arn},
            },
        },
    }


def sendable(text: str) -> str:
    """`text` cut to the service's limit, or one space when blank (empty text is refused)."""
    return text[:MAX_TEXT_CHARS] if text.strip() else " "
