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
