"""/health says when Bedrock marks the configured chat model LEGACY (GetFoundationModel's
`modelDetails.modelLifecycle`, the shape in botocore's bedrock service model), with an
inference profile id mapped to the foundation model it routes to. Bedrock is stubbed."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber
from fastapi.testclient import TestClient

from docchat.adapters.bedrock_models import BedrockModelLifecycle
from docchat.answer.backend import ChatBackend
from docchat.llm import foundation_model_id
from docchat.search.library import Library
from docchat.serve.app import create_app
from tests.chatkit import library, tuned_config

__all__ = ["library"]  # the fixture

PROFILE = "global.anthropic.claude-sonnet-4-6"
MODEL = "anthropic.claude-sonnet-4-6"


def _details(status: str) -> dict[str, object]:
    lifecycle: dict[str, object] = {"status": status}
    if status == "LEGACY":
        lifecycle["legacyTime"] = datetime(2026, 11, 1, tzinfo=UTC)
        lifecycle["endOfLifeTime"] = datetime(2027, 5, 1, tzinfo=UTC)
    return {
        "modelDetails": {
            "modelArn": f"arn:aws:bedrock:eu-west-1::foundation-model/{MODEL}",
            "modelId": MODEL,
            "modelLifecycle": lifecycle,
        }
    }


def _stubbed(*statuses: str) -> tuple[BedrockModelLifecycle, Stubber]:
    client = boto3.client(
        "bedrock", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    for status in statuses:
        stubber.add_response("get_foundation_model", _details(status), {"modelIdentifier": MODEL})
    stubber.activate()
    return BedrockModelLifecycle(client=lambda: client, model_id=lambda: PROFILE), stubber


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("global.anthropic.claude-sonnet-4-6", "anthropic.claude-sonnet-4-6"),
        (
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
        ),
        ("us-gov.anthropic.claude-sonnet-4-6", "anthropic.claude-sonnet-4-6"),
        ("anthropic.claude-sonnet-4-6", "anthropic.claude-sonnet-4-6"),
        ("amazon.titan-embed-text-v2:0", "amazon.titan-embed-text-v2:0"),
    ],
)
def test_foundation_model_id_strips_an_inference_profiles_geography(
    given: str, expected: str
) -> None:
    assert foundation_model_id(given) == expected


def test_health_says_the_configured_model_is_legacy_on_bedrock(library: Library) -> None:
    # Given a backend and Bedrock answering that the profile's model is LEGACY
    lifecycle, stubber = _stubbed("LEGACY")
    backend = ChatBackend(library=library, model=None, config=tuned_config())
    app = create_app(lambda: backend, model_lifecycle=lifecycle)

    # When /health is asked twice
    client = TestClient(app)
    first, second = client.get("/health"), client.get("/health")

    # Then it stays 200 (the model still answers) and says so, asking Bedrock once
    assert first.status_code == 200
    assert first.json()["checks"]["model"]["lifecycle"] == {
        "status": "LEGACY",
        "model": PROFILE,
        "foundation_model": MODEL,
        "legacy_since": "2026-11-01",
        "end_of_life": "2027-05-01",
        "note": f"Bedrock marks {MODEL} LEGACY; it reaches end of life on 2027-05-01: set "
        "ChatModelId (DOCCHAT_MODEL_ID) to an Active Claude model",
    }
    assert second.json() == first.json()
    stubber.assert_no_pending_responses()


def test_health_reports_an_active_model_and_a_failed_lookup_without_failing(
    library: Library,
) -> None:
    lifecycle, stubber = _stubbed("ACTIVE")
    backend = ChatBackend(library=library, model=None, config=tuned_config())
    checks = (
        TestClient(create_app(lambda: backend, model_lifecycle=lifecycle))
        .get("/health")
        .json()["checks"]
    )
    assert checks["model"]["lifecycle"] == {
        "status": "ACTIVE",
        "model": PROFILE,
        "foundation_model": MODEL,
    }

    # A role without bedrock:GetFoundationModel: the check says what to grant, and /health is 200
    denied, stubber = _stubbed()
    stubber.add_client_error("get_foundation_model", "AccessDeniedException", "not authorized", 403)
    response = TestClient(create_app(lambda: backend, model_lifecycle=denied)).get("/health")
    assert response.status_code == 200
    found = response.json()["checks"]["model"]["lifecycle"]
    assert found["status"] == "unknown"
    assert "bedrock:GetFoundationModel" in found["problem"]


def test_the_cloud_wiring_asks_bedrock_only_for_claude_on_bedrock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from docchat.config import Settings
    from docchat.processes import ModelChoice
    from docchat.wiring import cloud

    def services(settings: Settings, model: object) -> cloud.CloudServices:
        live = cloud.CloudServices(ModelChoice.of(settings, reader="the chat model"))
        live.__dict__["model"] = model
        return live

    lifecycle, stubber = _stubbed("LEGACY")
    monkeypatch.setattr(cloud, "bedrock_client", lambda region: lifecycle.client())
    model = SimpleNamespace(model_id=PROFILE)
    on_bedrock = services(Settings(model_provider="bedrock", region="eu-west-1"), model)
    made = cloud.model_lifecycle(on_bedrock)
    assert made is not None and made()["status"] == "LEGACY"
    stubber.assert_no_pending_responses()
    extractive = services(Settings(model_provider="none"), None)
    assert cloud.model_lifecycle(extractive) is None
