"""The Web Adapter's readiness route touches nothing; /health reports each dependency in JSON."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from docchat.answer.backend import ChatBackend
from docchat.search.library import Library
from docchat.serve.app import create_app
from docchat.wiring.cloud import cloud_app
from tests.chatkit import library, tuned_config

__all__ = ["library"]  # the fixture

UNREACHABLE = "http://127.0.0.1:9"  # nothing listens on the discard port


class BrokenRegistry:
    def documents(self) -> list[object]:
        raise ConnectionError("could not reach the documents table")

    def document(self, doc_id: str) -> None:
        raise ConnectionError("could not reach the documents table")


def test_ready_answers_without_building_the_backend() -> None:
    def backend() -> ChatBackend:
        raise AssertionError("readiness must not build the backend")

    response = TestClient(create_app(backend)).get("/ready")

    assert (response.status_code, response.json()) == (200, {"status": "ready"})


@pytest.mark.usefixtures("chat_function_env")
def test_ready_answers_the_cloud_app_with_every_aws_endpoint_unreachable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the cloud app's settings with every AWS endpoint on a closed port
    monkeypatch.setenv("AWS_ENDPOINT_URL", UNREACHABLE)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("DOCCHAT_DOCUMENTS_TABLE", "docchat-documents")
    monkeypatch.setenv("DOCCHAT_OPENSEARCH_ENDPOINT", "https://127.0.0.1:9")

    # When the adapter polls the readiness path
    response = TestClient(cloud_app()).get("/ready")

    # Then it answers at once
    assert (response.status_code, response.json()) == (200, {"status": "ready"})


def test_health_reports_a_failing_registry_as_json_503(library: Library) -> None:
    # Given a backend whose registry raises
    library.registry = BrokenRegistry()
    backend = ChatBackend(library=library, model=None, config=tuned_config())

    # When /health is asked
    response = TestClient(create_app(lambda: backend)).get("/health")

    # Then it answers in the app's error shape, with each dependency's state
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["status"] == 503
    assert error["message"] == (
        "a dependency failed: registry: could not reach the documents table"
    )
    assert error["checks"]["registry"] == {
        "status": "failed",
        "problem": "ConnectionError: could not reach the documents table",
    }
    assert error["checks"]["model"] == {"status": "none", "mode": "extractive"}
    assert error["checks"]["index"]["status"] == "ok"


def test_health_reports_a_backend_that_cannot_start_as_json_503() -> None:
    def backend() -> ChatBackend:
        raise RuntimeError("set DOCCHAT_DOCUMENTS_TABLE")

    response = TestClient(create_app(backend)).get("/health")

    assert response.status_code == 503
    assert response.json()["error"]["checks"] == {
        "backend": {"status": "failed", "problem": "RuntimeError: set DOCCHAT_DOCUMENTS_TABLE"}
    }


@pytest.mark.parametrize(
    ("region", "model_id", "status"),
    [
        ("eu-west-1", "cohere.rerank-v3-5:0", "off"),
        ("us-east-1", "amazon.rerank-v1:0", "off"),
        ("us-west-2", "cohere.rerank-v3-5:0", "ok"),
        ("eu-central-1", "amazon.rerank-v1:0", "ok"),
    ],
)
def test_health_says_a_rerank_model_the_region_lacks_is_off(
    region: str, model_id: str, status: str
) -> None:
    # Given the chat function's settings with Bedrock Rerank asked for in a Region
    from docchat.config import Settings
    from docchat.wiring import rerank_off, reranker

    environ = {
        "AWS_REGION": region,
        "DOCCHAT_RERANKER": "bedrock",
        "DOCCHAT_RERANK_MODEL_ID": model_id,
    }
    settings = Settings.from_env(environ)

    # Then the decision is made at start: no reranker (so no failing call per search) where
    # Bedrock does not offer the model, with a note that says so
    made = reranker(settings, embedder=None)  # type: ignore[arg-type]
    note = rerank_off(settings)
    assert (made is None) is (status == "off")
    assert (note != "") is (status == "off")
    if note:
        assert f"not in {region}" in note and model_id in note


def test_health_reports_the_rerank_note_and_searches_carry_it(library: Library) -> None:
    # Given a library whose Bedrock reranker is off in this Region
    library.reranker = None
    library.rerank_off = "reranking is off: Bedrock offers m only in us-west-2, not in xx-1"
    backend = ChatBackend(library=library, model=None, config=tuned_config())

    checks = TestClient(create_app(lambda: backend)).get("/health").json()["checks"]

    assert checks["reranker"] == {"status": "off", "note": library.rerank_off}
    assert library.search("bridges", top_k=3).rerank_note == library.rerank_off
