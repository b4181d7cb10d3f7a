"""BedrockReranker on a real bedrock-agent-runtime client, stubbed offline with botocore's Stubber.

The Stubber checks each call's parameters against the expected ones and the client validates
them against botocore's service model, so a wrong request shape fails here, not in AWS.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.stub import Stubber

from docchat.adapters.bedrock_reranker import BedrockReranker
from docchat.answer.agent import ExtractiveAnswerer
from docchat.answer.events import collected
from docchat.answer.prices import Price, Prices
from docchat.errors import DocchatError, RerankError
from docchat.models import Chunk, Passage
from docchat.search.library import Library
from tests.chatkit import PAGES, SEARCH, library_of, tuned_config

MODEL = "cohere.rerank-v3-5:0"
MODEL_ARN = "arn:aws:bedrock:us-east-1::foundation-model/cohere.rerank-v3-5:0"
QUERY = "torque for the M8 head bolts"


pytestmark = pytest.mark.usefixtures("dummy_aws")


def agent_runtime_client(**kwargs: Any) -> Any:
    """A real bedrock-agent-runtime client in us-east-1 with one attempt per call."""
    config = Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=1)
    return boto3.client("bedrock-agent-runtime", region_name="us-east-1", config=config, **kwargs)


@pytest.fixture
def stubbed() -> Iterator[tuple[BedrockReranker, Stubber]]:
    client = agent_runtime_client()
    with Stubber(client) as stubber:
        yield BedrockReranker(client=client), stubber
        stubber.assert_no_pending_responses()


def passage(number: int, text: str) -> Passage:
    chunk = Chunk(
        chunk_id=f"c{number}",
        doc_id="manual",
        version="v1",
        source="docs/manual.pdf",
        title="Service manual",
        headings=["Engine"],
        page_start=number + 1,
        page_end=number + 1,
        text=text,
    )
    return Passage(chunk=chunk, score=1.0 / (60 + number), vector_rank=number, keyword_rank=None)


PASSAGES = [
    passage(0, "Check the oil level weekly."),
    passage(1, "The warranty covers two years."),
    passage(2, "Tighten the M8 head bolts to 25 N·m."),
]


def expected_request(texts: list[str], *, top_n: int, model_arn: str = MODEL_ARN) -> dict[str, Any]:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": QUERY}}],
        "sources": [
            {
                "type": "INLINE",
                "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text}},
            }
            for text in texts
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": top_n,
                "modelConfiguration": {"modelArn": model_arn},
            },
        },
    }


def embed_texts(passages: list[Passage]) -> list[str]:
    return [p.chunk.embed_text for p in passages]


def test_bedrock_reranker_sends_rerank_request_with_passage_context(
    stubbed: tuple[BedrockReranker, Stubber],
) -> None:
    reranker, stubber = stubbed
    stubber.add_response(
        "rerank",
        {"results": [{"index": 2, "relevanceScore": 0.9}]},
        expected_request(embed_texts(PASSAGES), top_n=1),
    )

    reranker.rerank(QUERY, PASSAGES, top_n=1)

    assert embed_texts(PASSAGES)[2] == (
        "manual\nService manual\nEngine\nTighten the M8 head bolts to 25 N·m."
    )


def test_bedrock_reranker_reorders_by_index_and_takes_relevance_scores(
    stubbed: tuple[BedrockReranker, Stubber],
) -> None:
    reranker, stubber = stubbed
    results = [{"index": 2, "relevanceScore": 0.91}, {"index": 0, "relevanceScore": 0.42}]
    stubber.add_response(
        "rerank", {"results": results}, expected_request(embed_texts(PASSAGES), top_n=2)
    )

    ranked = reranker.rerank(QUERY, PASSAGES, top_n=2)

    assert [(p.chunk.chunk_id, p.score) for p in ranked] == [("c2", 0.91), ("c0", 0.42)]
    assert ranked[0] == PASSAGES[2].model_copy(update={"score": 0.91})
    assert PASSAGES[2].score == pytest.approx(1 / 62)


def test_bedrock_reranker_orders_by_score_whatever_the_result_order(
    stubbed: tuple[BedrockReranker, Stubber],
) -> None:
    reranker, stubber = stubbed
    results = [{"index": 0, "relevanceScore": 0.1}, {"index": 1, "relevanceScore": 0.7}]
    stubber.add_response(
        "rerank", {"results": results}, expected_request(embed_texts(PASSAGES), top_n=2)
    )

    ranked = reranker.rerank(QUERY, PASSAGES, top_n=2)

    assert [p.chunk.chunk_id for p in ranked] == ["c1", "c0"]


@pytest.mark.parametrize(("top_n", "asked"), [(1, 1), (3, 3), (10, 3)])
def test_bedrock_reranker_asks_for_at_most_top_n_results(
    stubbed: tuple[BedrockReranker, Stubber], top_n: int, asked: int
) -> None:
    reranker, stubber = stubbed
    results = [{"index": i, "relevanceScore": 1.0 - i / 10} for i in range(asked)]
    stubber.add_response(
        "rerank", {"results": results}, expected_request(embed_texts(PASSAGES), top_n=asked)
    )

    ranked = reranker.rerank(QUERY, PASSAGES, top_n=top_n)

    assert [p.chunk.chunk_id for p in ranked] == [f"c{i}" for i in range(asked)]


def test_bedrock_reranker_keeps_top_n_even_when_the_service_returns_more(
    stubbed: tuple[BedrockReranker, Stubber],
) -> None:
    reranker, stubber = stubbed
    results = [{"index": i, "relevanceScore": 1.0 - i / 10} for i in range(3)]
    stubber.add_response(
        "rerank", {"results": results}, expected_request(embed_texts(PASSAGES), top_n=2)
    )

    assert len(reranker.rerank(QUERY, PASSAGES, top_n=2)) == 2


def test_bedrock_reranker_sends_a_space_for_blank_text(
    stubbed: tuple[BedrockReranker, Stubber],
) -> None:
    reranker, stubber = stubbed
    blank = passage(0, "").model_copy(
        update={
            "chunk": passage(0, "").chunk.model_copy(
                update={"source": "", "title": "", "headings": []}
            )
        }
    )
    stubber.add_response(
        "rerank",
        {"results": [{"index": 0, "relevanceScore": 0.0}]},
        expected_request([" "], top_n=1),
    )

    assert len(reranker.rerank(QUERY, [blank], top_n=1)) == 1


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        ("AccessDeniedException", "allow bedrock:Rerank and bedrock:InvokeModel"),
        ("ThrottlingException", "try again later"),
        ("ValidationException", "check the model id"),
    ],
)
def test_bedrock_reranker_client_errors_raise_rerank_error(
    stubbed: tuple[BedrockReranker, Stubber], code: str, hint: str
) -> None:
    reranker, stubber = stubbed
    stubber.add_client_error(
        "rerank",
        service_error_code=code,
        service_message="refused",
        http_status_code=403 if code == "AccessDeniedException" else 400,
        expected_params=expected_request(embed_texts(PASSAGES), top_n=2),
    )

    with pytest.raises(RerankError) as raised:
        reranker.rerank(QUERY, PASSAGES, top_n=2)

    message = str(raised.value)
    assert MODEL in message
    assert "us-east-1" in message
    assert f"{code}: refused" in message
    assert hint in message
    assert raised.value.code == "rerank_failed"
    assert isinstance(raised.value, DocchatError)
    assert isinstance(raised.value.__cause__, ClientError)


def test_bedrock_reranker_unreachable_endpoint_raises_rerank_error() -> None:
    # Port 9 on loopback refuses at once; loopback is the only network tests may touch.
    client = agent_runtime_client(endpoint_url="http://127.0.0.1:9")
    reranker = BedrockReranker(client=client)

    with pytest.raises(RerankError, match=r"cohere\.rerank-v3-5:0 in us-east-1") as raised:
        reranker.rerank(QUERY, PASSAGES, top_n=2)

    assert isinstance(raised.value.__cause__, EndpointConnectionError)


def test_bedrock_reranker_unknown_index_raises_rerank_error(
    stubbed: tuple[BedrockReranker, Stubber],
) -> None:
    reranker, stubber = stubbed
    stubber.add_response(
        "rerank",
        {"results": [{"index": 7, "relevanceScore": 0.5}]},
        expected_request(embed_texts(PASSAGES), top_n=1),
    )

    with pytest.raises(RerankError, match="index 7 for 3 passages"):
        reranker.rerank(QUERY, PASSAGES, top_n=1)


@pytest.mark.parametrize(("passages", "top_n"), [([], 5), (PASSAGES, 0)])
def test_bedrock_reranker_makes_no_call_for_nothing_to_rank(
    stubbed: tuple[BedrockReranker, Stubber], passages: list[Passage], top_n: int
) -> None:
    reranker, _ = stubbed  # no stubbed response: any call would raise

    assert reranker.rerank(QUERY, passages, top_n=top_n) == []


def test_bedrock_reranker_keeps_a_model_arn_given_as_model_id() -> None:
    arn = "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0"
    client = agent_runtime_client()
    reranker = BedrockReranker(client=client, model_id=arn)
    with Stubber(client) as stubber:
        stubber.add_response(
            "rerank",
            {"results": [{"index": 0, "relevanceScore": 0.3}]},
            expected_request(embed_texts(PASSAGES[:1]), top_n=1, model_arn=arn),
        )

        reranker.rerank(QUERY, PASSAGES[:1], top_n=1)

    assert reranker.model_arn("us-east-1") == arn


def test_bedrock_reranker_creates_its_client_on_first_use() -> None:
    reranker = BedrockReranker(region="us-west-2")

    assert reranker._client is None
    client = reranker.client

    assert reranker.client is client
    assert client.meta.service_model.service_name == "bedrock-agent-runtime"
    assert client.meta.region_name == "us-west-2"
    assert client.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 3}
    assert client.meta.config.read_timeout == 10
    assert reranker.model_arn(client.meta.region_name) == (
        "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"
    )


@pytest.mark.parametrize(("passages", "units"), [(0, 0), (1, 1), (100, 1), (101, 2), (5000, 10)])
def test_bedrock_rerank_bills_a_search_unit_per_hundred_passages(passages: int, units: int) -> None:
    # "A query is a single call to the reranker model that can contain up to 100 document
    # chunks" (Pricing and search units); past the 1,000 sources a call takes, none are sent
    assert BedrockReranker(client=object()).search_units(passages) == units


def test_an_answer_reranked_by_bedrock_counts_its_search_units_and_prices_them_when_told(
    tmp_path: Path,
) -> None:
    # Given a library whose searches Bedrock reranks (one call per search, stubbed)
    client = agent_runtime_client()
    results = {"results": [{"index": 0, "relevanceScore": 0.9}]}
    question = [{"role": "user", "content": "When did the new bridge open?"}]
    with Stubber(client) as stubber:
        for _ in range(2):
            stubber.add_response("rerank", results)
        plain = library_of(tmp_path / "i.sqlite3", PAGES)
        library = Library(
            index=plain.index,
            embedder=plain.embedder,
            registry=plain.registry,
            reranker=BedrockReranker(client=client),
            **SEARCH,
        )

        # When an answer is given, with no price for the rerank model and with one
        unpriced = collected(ExtractiveAnswerer(library, tuned_config()).run(question))
        prices = Prices(overrides={"cohere.rerank-v3-5": Price(search_unit=0.002)})
        priced = collected(ExtractiveAnswerer(library, tuned_config(prices=prices)).run(question))

    # Then its usage counts the one search unit, and its cost is unknown until it is priced
    assert unpriced.done is not None and priced.done is not None
    assert unpriced.done.usage.rerank_search_units == 1
    assert unpriced.done.usage.cost_usd is None
    assert priced.done.usage.rerank_search_units == 1
    assert priced.done.usage.cost_usd == 0.002
