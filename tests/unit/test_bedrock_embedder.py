"""Bedrock embedders on a real bedrock-runtime client, stubbed offline with botocore's Stubber."""

from __future__ import annotations

import io
import json
import threading
import time
import types
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.endpoint
import numpy as np
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError, NoCredentialsError
from botocore.response import StreamingBody
from botocore.retries import bucket
from botocore.stub import Stubber

from docchat.adapters import bedrock_embedder
from docchat.adapters.bedrock_embedder import (
    CohereEmbedder,
    TitanEmbedder,
    embedder_for,
)
from docchat.errors import (
    ConfigError,
    EmbeddingAccessDeniedError,
    EmbeddingError,
    EmbeddingThrottledError,
)

TITAN = "amazon.titan-embed-text-v2:0"
COHERE = "cohere.embed-english-v3"


pytestmark = pytest.mark.usefixtures("dummy_aws")


def runtime_client(max_attempts: int = 1) -> Any:
    """A real bedrock-runtime client; one attempt unless told, so errors surface at once."""
    config = Config(retries={"mode": "adaptive", "max_attempts": max_attempts})
    return boto3.client("bedrock-runtime", region_name="us-east-1", config=config)


@pytest.fixture
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    client = runtime_client()
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def streaming(payload: dict[str, Any]) -> dict[str, Any]:
    """An InvokeModel response whose body is `payload` as JSON."""
    raw = json.dumps(payload).encode()
    return {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}


def call(model_id: str, body: str) -> dict[str, str]:
    return {
        "modelId": model_id,
        "body": body,
        "contentType": "application/json",
        "accept": "application/json",
    }


def axis(index: int, dimension: int, scale: float = 1.0) -> list[float]:
    vector = [0.0] * dimension
    vector[index] = scale
    return vector


def test_titan_embedder_sends_one_text_per_call_and_returns_unit_rows_in_order(
    stubbed: tuple[Any, Stubber],
) -> None:
    client, stubber = stubbed
    first = [3.0, 4.0] + [0.0] * 254
    stubber.add_response(
        "invoke_model",
        streaming({"embedding": first, "inputTextTokenCount": 1}),
        call(TITAN, '{"inputText": "alpha", "dimensions": 256, "normalize": true}'),
    )
    stubber.add_response(
        "invoke_model",
        streaming({"embedding": axis(2, 256, 5.0), "inputTextTokenCount": 1}),
        call(TITAN, '{"inputText": "beta", "dimensions": 256, "normalize": true}'),
    )
    embedder = TitanEmbedder(client=client, dimension=256, concurrency=1)
    done: list[int] = []

    vectors = embedder.embed_documents(["alpha", "beta"], on_batch=done.append)

    assert vectors.shape == (2, 256) and vectors.dtype == np.float32
    assert vectors[0, :2].tolist() == pytest.approx([0.6, 0.8])
    assert vectors[1].tolist() == axis(2, 256)
    assert done == [1, 1]


def test_titan_embedder_sends_a_single_space_for_blank_text(
    stubbed: tuple[Any, Stubber],
) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "invoke_model",
        streaming({"embedding": axis(0, 1024)}),
        call(TITAN, '{"inputText": " ", "dimensions": 1024, "normalize": true}'),
    )

    vector = TitanEmbedder(client=client).embed_query(" \n\t")

    assert vector.shape == (1024,) and vector[0] == 1.0


@pytest.mark.parametrize("kind", ["titan", "cohere"])
def test_a_question_asked_again_is_not_embedded_again(
    stubbed: tuple[Any, Stubber], kind: str
) -> None:
    # A question's hybrid search, its sentence reranker and its extractive answer each ask for
    # its vector: each was a Bedrock call (the reranker remembered one query, for itself).
    client, stubber = stubbed
    answer = {"embedding": axis(0, 1024)} if kind == "titan" else {"embeddings": [axis(1, 1024)]}
    for _ in range(2):
        stubber.add_response("invoke_model", streaming(answer))
    embedder = TitanEmbedder(client=client) if kind == "titan" else CohereEmbedder(client=client)

    first = embedder.embed_query("When does the ferry leave?")
    again = embedder.embed_query("When does the ferry leave?")
    other = embedder.embed_query("Who built the bridge?")

    assert again is first and not first.flags.writeable
    assert other.shape == first.shape
    stubber.assert_no_pending_responses()  # two calls: one per distinct question


class EchoClient:
    """Answers Titan calls on many threads: text "t<n>" embeds as axis n, after a jittered wait."""

    meta = types.SimpleNamespace(region_name="us-east-1")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        body = json.loads(kwargs["body"])
        index = int(body["inputText"][1:])
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.002 * (index * 7 % 5))  # later texts often finish first
        with self._lock:
            self.in_flight -= 1
        return streaming({"embedding": axis(index, body["dimensions"], 2.0)})


def test_titan_embedder_keeps_input_order_with_bounded_concurrency() -> None:
    client = EchoClient()
    embedder = TitanEmbedder(client=client, dimension=256, concurrency=3)
    done: list[int] = []

    vectors = embedder.embed_documents([f"t{i}" for i in range(20)], on_batch=done.append)

    assert np.array_equal(vectors, np.eye(20, 256, dtype=np.float32))
    assert 1 < client.most_in_flight <= 3
    assert done == [1] * 20


def test_titan_embedder_refuses_an_unsupported_dimension() -> None:
    with pytest.raises(ConfigError, match=r"dimension \(300\) must be one of 256, 512 or 1024"):
        TitanEmbedder(dimension=300)


def test_embedder_refuses_zero_concurrency() -> None:
    with pytest.raises(ConfigError, match=r"concurrency \(0\) must be at least 1"):
        CohereEmbedder(concurrency=0)


def test_cohere_embedder_sends_at_most_96_texts_per_call(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    texts = [f"text {i}" for i in range(97)]
    for batch in (texts[:96], texts[96:]):
        start = int(batch[0].split()[1])
        stubber.add_response(
            "invoke_model",
            streaming(
                {
                    "id": "x",
                    "texts": batch,
                    "embeddings": [axis(start + i, 1024, 3.0) for i in range(len(batch))],
                    "response_type": "embeddings_floats",
                }
            ),
            call(
                COHERE,
                json.dumps({"texts": batch, "input_type": "search_document", "truncate": "END"}),
            ),
        )
    done: list[int] = []

    vectors = CohereEmbedder(client=client, concurrency=1).embed_documents(
        texts, on_batch=done.append
    )

    assert np.array_equal(vectors, np.eye(97, 1024, dtype=np.float32))
    assert done == [96, 1]


def test_cohere_embedder_embeds_a_query_as_search_query(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "invoke_model",
        streaming({"embeddings": [axis(5, 1024, 0.5)]}),
        call(
            COHERE, '{"texts": ["where is it?"], "input_type": "search_query", "truncate": "END"}'
        ),
    )

    vector = CohereEmbedder(client=client).embed_query("where is it?")

    assert vector.tolist() == axis(5, 1024)


def test_cohere_embedder_clips_texts_to_2048_characters(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "invoke_model",
        streaming({"embeddings": [axis(0, 1024)]}),
        call(
            COHERE,
            json.dumps({"texts": ["a" * 2048], "input_type": "search_query", "truncate": "END"}),
        ),
    )

    CohereEmbedder(client=client).embed_query("a" * 3000)


def test_cohere_embedder_refuses_an_answer_with_too_few_vectors(
    stubbed: tuple[Any, Stubber],
) -> None:
    client, stubber = stubbed
    stubber.add_response("invoke_model", streaming({"embeddings": [axis(0, 1024)]}))

    with pytest.raises(EmbeddingError, match=r"shape \(1, 1024\), expected \(2, 1024\)"):
        CohereEmbedder(client=client).embed_documents(["one", "two"])


@pytest.mark.parametrize(
    "embedder",
    [TitanEmbedder, CohereEmbedder],
)
def test_embedders_return_an_empty_matrix_without_calling_bedrock(
    stubbed: tuple[Any, Stubber], embedder: type[TitanEmbedder] | type[CohereEmbedder]
) -> None:
    client, _ = stubbed  # no response queued: any call would fail the test
    done: list[int] = []

    vectors = embedder(client=client).embed_documents([], on_batch=done.append)

    assert vectors.shape == (0, 1024) and vectors.dtype == np.float32
    assert done == []


def test_access_denied_names_the_model_and_what_to_do(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_client_error(
        "invoke_model",
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
        http_status_code=403,
    )

    with pytest.raises(EmbeddingAccessDeniedError) as caught:
        TitanEmbedder(client=client).embed_documents(["x"])

    message = str(caught.value)
    assert f"access denied to Bedrock model {TITAN} in us-east-1" in message
    assert "enable model access" in message and "Bedrock console in us-east-1" in message
    assert f"bedrock:InvokeModel on arn:aws:bedrock:us-east-1::foundation-model/{TITAN}" in message
    assert caught.value.__cause__ is not None


@pytest.mark.parametrize(
    ("code", "status", "message"),
    [
        ("ValidationException", 400, "The provided model identifier is invalid."),
        ("ResourceNotFoundException", 404, "Model not found."),
    ],
)
def test_unknown_model_reads_as_not_enabled_in_the_region(
    stubbed: tuple[Any, Stubber], code: str, status: int, message: str
) -> None:
    client, stubber = stubbed
    stubber.add_client_error("invoke_model", code, message, http_status_code=status)

    with pytest.raises(
        EmbeddingAccessDeniedError,
        match=rf"model {COHERE} is not available or not enabled in us-east-1",
    ):
        CohereEmbedder(client=client).embed_query("x")


def test_other_validation_errors_stay_plain_embedding_errors(
    stubbed: tuple[Any, Stubber],
) -> None:
    client, stubber = stubbed
    stubber.add_client_error(
        "invoke_model", "ValidationException", "Malformed input request", http_status_code=400
    )

    with pytest.raises(
        EmbeddingError, match=r"failed \(ValidationException\): Malformed"
    ) as caught:
        TitanEmbedder(client=client).embed_query("x")

    assert type(caught.value) is EmbeddingError


@pytest.mark.parametrize(
    "code",
    [
        "ThrottlingException",
        "ServiceQuotaExceededException",
        "ModelNotReadyException",
        "ServiceUnavailableException",
        "ModelTimeoutException",
    ],
)
def test_throttling_left_after_client_retries_asks_for_a_later_retry(
    stubbed: tuple[Any, Stubber], code: str
) -> None:
    client, stubber = stubbed
    stubber.add_client_error("invoke_model", code, "Too many requests", http_status_code=429)

    with pytest.raises(EmbeddingThrottledError, match=r"throttled .* the pipeline retries later"):
        TitanEmbedder(client=client).embed_documents(["x"])


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (EndpointConnectionError(endpoint_url="https://bedrock"), EmbeddingThrottledError),
        (NoCredentialsError(), EmbeddingError),
    ],
)
def test_client_side_failures_become_embedding_errors(
    failure: Exception, error: type[EmbeddingError]
) -> None:
    class Failing:
        meta = types.SimpleNamespace(region_name="eu-west-1")

        def invoke_model(self, **kwargs: Any) -> Any:
            raise failure

    with pytest.raises(error, match=f"model {TITAN} in eu-west-1") as caught:
        TitanEmbedder(client=Failing()).embed_query("x")

    assert type(caught.value) is error and caught.value.__cause__ is failure


class RawBody:
    """Just enough of urllib3's response for botocore to read a canned HTTP body."""

    def __init__(self, payload: bytes) -> None:
        self._buffer = io.BytesIO(payload)

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._buffer.read()

    def read(self, amt: int | None = None) -> bytes:
        return self._buffer.read(amt)


def test_throttled_call_is_retried_by_the_client_when_attempts_remain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The Stubber answers at `before-call`, ahead of botocore's retry loop, so a stubbed
    # ThrottlingException is never retried. A `before-send` hook answers inside the loop.
    backoffs: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=backoffs.append))
    monkeypatch.setattr(bucket.TokenBucket, "_sleep_amount", lambda self, amount: 0.0)
    answers = iter(
        [
            (429, {"x-amzn-ErrorType": "ThrottlingException"}, {"message": "Too many requests"}),
            (200, {"content-type": "application/json"}, {"embedding": axis(1, 256)}),
        ]
    )
    sent: list[bytes] = []

    def send(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.body)
        status, headers, payload = next(answers)
        raw = json.dumps(payload).encode()
        return AWSResponse(
            request.url, status, {**headers, "content-length": str(len(raw))}, RawBody(raw)
        )

    client = runtime_client(max_attempts=3)
    client.meta.events.register("before-send.bedrock-runtime.InvokeModel", send)

    vector = TitanEmbedder(client=client, dimension=256).embed_query("hello")

    assert vector.tolist() == axis(1, 256)
    assert len(sent) == 2 and sent[0] == sent[1]
    assert len(backoffs) == 1


def test_client_is_created_on_first_use_once_with_adaptive_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[dict[str, Any]] = []
    client = runtime_client()
    stubber = Stubber(client)
    for _ in range(2):
        stubber.add_response("invoke_model", streaming({"embedding": axis(0, 1024)}))

    def make(service: str, **kwargs: Any) -> Any:
        made.append({"service": service, **kwargs})
        return client

    monkeypatch.setattr(bedrock_embedder.boto3, "client", make)
    embedder = TitanEmbedder(region="eu-central-1")
    assert made == []

    with stubber:
        embedder.embed_query("a")
        embedder.embed_query("b")

    (only,) = made
    assert only["service"] == "bedrock-runtime" and only["region_name"] == "eu-central-1"
    config = only["config"]
    assert config.retries == {"mode": "adaptive", "total_max_attempts": 9}
    assert (config.connect_timeout, config.read_timeout) == (5, 60)


def test_embedder_for_builds_each_kind_with_defaults() -> None:
    titan = embedder_for("titan", model_id=None, dimension=512, concurrency=2, region="us-east-1")
    cohere = embedder_for(
        "cohere",
        model_id="cohere.embed-multilingual-v3",
        dimension=None,
        concurrency=2,
        region="us-east-1",
    )

    assert isinstance(titan, TitanEmbedder)
    assert (titan.model_id, titan.dimension) == (TITAN, 512)
    assert isinstance(cohere, CohereEmbedder)
    assert (cohere.model_id, cohere.dimension) == ("cohere.embed-multilingual-v3", 1024)


def test_embedder_for_refuses_unknown_kinds_and_cohere_dimensions() -> None:
    with pytest.raises(ValueError, match=r"unknown Bedrock embedder kind 'openai': choose one of"):
        embedder_for("openai", model_id=None, dimension=None, concurrency=1, region=None)
    with pytest.raises(ValueError, match=r"1024 dimensions, not 256"):
        embedder_for("cohere", model_id=None, dimension=256, concurrency=1, region=None)
