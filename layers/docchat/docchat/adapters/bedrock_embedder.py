"""Amazon Bedrock embedders: Titan Text Embeddings V2 and Cohere Embed v3 through InvokeModel.

Request and response bodies follow the Bedrock user guide pages "Amazon Titan Embeddings G1 -
Text" (its V2 request/response tabs) and "Cohere Embed v3". The boto3 client does the retrying
(adaptive mode); what still fails afterwards is mapped onto the `EmbeddingError` family.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import boto3
import numpy as np
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from docchat.adapters.embedding import RecentQueries
from docchat.errors import (
    ConfigError,
    EmbeddingAccessDeniedError,
    EmbeddingError,
    EmbeddingThrottledError,
)
from docchat.ports import Vectors
from docchat.vectors import unit_length

TITAN_MODEL_ID = "amazon.titan-embed-text-v2:0"
TITAN_DIMENSIONS = (256, 512, 1024)
COHERE_MODEL_ID = "cohere.embed-english-v3"
COHERE_DIMENSION = 1024
COHERE_MAX_TEXTS = 96
# Bedrock refuses Cohere v3 texts longer than this many characters, whatever `truncate` says.
COHERE_MAX_CHARS = 2048
# Nine attempts in all, said as a total: botocore's `max_attempts` counts retries only, and newer
# botocore releases rewrite it into `total_max_attempts`.
CLIENT_CONFIG = Config(
    retries={"mode": "adaptive", "total_max_attempts": 9}, connect_timeout=5, read_timeout=60
)
# Still failing after the client's own retries, but likely to pass later.
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceQuotaExceededException",
        "ModelNotReadyException",
        "ServiceUnavailableException",
        "ModelTimeoutException",
    }
)
EMBEDDER_KINDS = ("titan", "cohere")

BatchCallback = Callable[[int], None]


class BedrockModel:
    """One Bedrock model behind a lazily created, shared `bedrock-runtime` client."""

    def __init__(self, *, model_id: str, client: Any | None, region: str | None) -> None:
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
                    "bedrock-runtime", region_name=self._region, config=CLIENT_CONFIG
                )
            return self._client

    def invoke(self, body: dict[str, Any]) -> dict[str, Any]:
        """The model's JSON answer to one InvokeModel call with `body`."""
        client = self.client
        region = client.meta.region_name
        try:
            response = client.invoke_model(
                modelId=self.model_id,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
            answer = json.loads(response["body"].read())
        except ClientError as exc:
            raise error_for(exc, model_id=self.model_id, region=region) from exc
        except BotoConnectionError as exc:
            raise EmbeddingThrottledError(
                f"Bedrock model {self.model_id} in {region} could not be reached ({exc}) "
                "after the client's retries: the pipeline retries later"
            ) from exc
        except BotoCoreError as exc:
            raise EmbeddingError(
                f"cannot call Bedrock model {self.model_id} in {region}: {exc}; "
                "check the AWS credentials and region"
            ) from exc
        except ValueError as exc:
            raise EmbeddingError(
                f"Bedrock model {self.model_id} in {region} answered with invalid JSON: {exc}"
            ) from exc
        if not isinstance(answer, dict):
            raise EmbeddingError(
                f"Bedrock model {self.model_id} answered with {type(answer).__name__}, "
                "expected a JSON object: check that the model id names an embedding model"
            )
        return answer


def error_for(exc: ClientError, *, model_id: str, region: str) -> EmbeddingError:
    """The docchat error for a Bedrock `ClientError`, saying what to do about it."""
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    message = str(error.get("Message", ""))
    if code == "AccessDeniedException":
        arn = f"arn:aws:bedrock:{region}::foundation-model/{model_id}"
        if model_id.startswith("arn:"):
            arn = model_id
        return EmbeddingAccessDeniedError(
            f"access denied to Bedrock model {model_id} in {region} ({message}): enable model "
            f"access for {model_id} in the Bedrock console in {region}, and allow "
            f"bedrock:InvokeModel on {arn} to this role"
        )
    invalid_model = code == "ValidationException" and "model identifier" in message.lower()
    if code == "ResourceNotFoundException" or invalid_model:
        return EmbeddingAccessDeniedError(
            f"Bedrock model {model_id} is not available or not enabled in {region} ({message}): "
            f"check the model id, and enable the model in the Bedrock console in {region} "
            "or choose a region that offers it"
        )
    if code in TRANSIENT_CODES:
        return EmbeddingThrottledError(
            f"Bedrock model {model_id} in {region} is throttled or busy ({code}: {message}) "
            "after the client's retries: the pipeline retries later"
        )
    return EmbeddingError(f"Bedrock model {model_id} in {region} failed ({code}): {message}")


def unit_rows(rows: object, *, count: int, dimension: int, model_id: str) -> Vectors:
    """`rows` as a (count, dimension) float32 matrix with L2-normalised rows."""
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"Bedrock model {model_id} returned malformed vectors: {exc}") from exc
    if matrix.shape != (count, dimension):
        raise EmbeddingError(
            f"Bedrock model {model_id} returned vectors of shape {matrix.shape}, expected "
            f"({count}, {dimension}): check that the model id and dimension belong together"
        )
    return unit_length(matrix)


def embed_in_groups(
    texts: Sequence[str],
    *,
    group_size: int,
    embed_group: Callable[[list[str]], Vectors],
    dimension: int,
    workers: int,
    on_batch: BatchCallback | None,
) -> Vectors:
    """Rows for `texts` in order, embedding contiguous groups on at most `workers` threads."""
    out = np.zeros((len(texts), dimension), dtype=np.float32)
    spans = [(i, min(i + group_size, len(texts))) for i in range(0, len(texts), group_size)]
    if not spans:
        return out
    with ThreadPoolExecutor(max_workers=min(workers, len(spans))) as pool:
        running = {pool.submit(embed_group, list(texts[a:b])): (a, b) for a, b in spans}
        try:
            # Results are collected here, so `on_batch` always runs on the caller's thread.
            for future in as_completed(running):
                start, stop = running[future]
                out[start:stop] = future.result()
                if on_batch:
                    on_batch(stop - start)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return out


def sendable(text: str) -> str:
    """`text`, or a single space when it is blank: Bedrock refuses empty input text."""
    return text if text.strip() else " "


def check_concurrency(concurrency: int) -> None:
    """Refuse a worker count below one."""
    if concurrency < 1:
        raise ConfigError(f"embedding concurrency ({concurrency}) must be at least 1")


class TitanEmbedder:
    """Amazon Titan Text Embeddings V2: one text per call, `concurrency` calls at a time."""

    def __init__(
        self,
        *,
        client: Any | None = None,
        model_id: str = TITAN_MODEL_ID,
        dimension: int = 1024,
        concurrency: int = 8,
        region: str | None = None,
    ) -> None:
        if dimension not in TITAN_DIMENSIONS:
            raise ConfigError(
                f"Titan embedding dimension ({dimension}) must be one of 256, 512 or 1024"
            )
        check_concurrency(concurrency)
        self._model = BedrockModel(model_id=model_id, client=client, region=region)
        self._dimension = dimension
        self._concurrency = concurrency
        self._queries = RecentQueries()

    @property
    def model_id(self) -> str:
        """The Bedrock model id."""
        return self._model.model_id

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        return self._dimension

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: BatchCallback | None = None
    ) -> Vectors:
        """One normalised row per text, in order; `on_batch(1)` after each finished text."""
        return embed_in_groups(
            texts,
            group_size=1,
            embed_group=self._embed_group,
            dimension=self._dimension,
            workers=self._concurrency,
            on_batch=on_batch,
        )

    def embed_query(self, text: str) -> Vectors:
        """The normalised vector of one query (read-only; the last ones are remembered)."""
        return self._queries.vector(text, lambda t: self._embed_group([t])[0])

    def _embed_group(self, texts: list[str]) -> Vectors:
        (text,) = texts
        body = {"inputText": sendable(text), "dimensions": self._dimension, "normalize": True}
        answer = self._model.invoke(body)
        return unit_rows(
            [answer.get("embedding")],
            count=1,
            dimension=self._dimension,
            model_id=self.model_id,
        )


class CohereEmbedder:
    """Cohere Embed v3 (1024 dimensions): up to 96 texts per call, `concurrency` calls at a time."""

    def __init__(
        self,
        *,
        client: Any | None = None,
        model_id: str = COHERE_MODEL_ID,
        concurrency: int = 4,
        region: str | None = None,
    ) -> None:
        check_concurrency(concurrency)
        self._model = BedrockModel(model_id=model_id, client=client, region=region)
        self._concurrency = concurrency
        self._queries = RecentQueries()

    @property
    def model_id(self) -> str:
        """The Bedrock model id."""
        return self._model.model_id

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        return COHERE_DIMENSION

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: BatchCallback | None = None
    ) -> Vectors:
        """One normalised row per text, in order; `on_batch(n)` after each call of n texts."""
        return embed_in_groups(
            texts,
            group_size=COHERE_MAX_TEXTS,
            embed_group=self._embed_documents,
            dimension=COHERE_DIMENSION,
            workers=self._concurrency,
            on_batch=on_batch,
        )

    def embed_query(self, text: str) -> Vectors:
        """The normalised vector of one query (embedded as a `search_query`; read-only, the
        last ones are remembered)."""
        return self._queries.vector(text, lambda t: self._embed([t], input_type="search_query")[0])

    def _embed_documents(self, texts: list[str]) -> Vectors:
        return self._embed(texts, input_type="search_document")

    def _embed(self, texts: list[str], *, input_type: str) -> Vectors:
        body = {
            "texts": [sendable(t)[:COHERE_MAX_CHARS] for t in texts],
            "input_type": input_type,
            "truncate": "END",
        }
        answer = self._model.invoke(body)
        return unit_rows(
            answer.get("embeddings"),
            count=len(texts),
            dimension=COHERE_DIMENSION,
            model_id=self.model_id,
        )


def embedder_for(
    kind: str,
    *,
    model_id: str | None,
    dimension: int | None,
    concurrency: int,
    region: str | None,
) -> TitanEmbedder | CohereEmbedder:
    """The Bedrock embedder of `kind` ("titan" or "cohere"); None picks the model's default."""
    if kind == "titan":
        return TitanEmbedder(
            model_id=model_id or TITAN_MODEL_ID,
            dimension=1024 if dimension is None else dimension,
            concurrency=concurrency,
            region=region,
        )
    if kind == "cohere":
        if dimension not in (None, COHERE_DIMENSION):
            raise ValueError(
                f"Cohere Embed v3 vectors have {COHERE_DIMENSION} dimensions, not {dimension}"
            )
        return CohereEmbedder(
            model_id=model_id or COHERE_MODEL_ID, concurrency=concurrency, region=region
        )
    raise ValueError(
        f"unknown Bedrock embedder kind {kind!r}: choose one of {', '.join(EMBEDDER_KINDS)}"
    )
