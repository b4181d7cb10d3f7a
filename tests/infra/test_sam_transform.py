"""The template translates (as at deploy time) for every ApiAuth choice, with the right auth."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

SAM_PYTHON = REPO / ".venv-sam" / "bin" / "python"


def _translate(**parameters: str) -> dict[str, Any]:
    if not SAM_PYTHON.exists():
        pytest.skip(f"SAM CLI is not installed at {SAM_PYTHON} (make install puts it there)")
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}
    result = subprocess.run(
        [
            str(SAM_PYTHON),
            str(Path(__file__).with_name("sam_transform.py")),
            str(REPO / "template.yaml"),
            json.dumps(parameters),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    translated: dict[str, Any] = json.loads(result.stdout)
    return translated


def _security(translated: dict[str, Any]) -> Any:
    method = translated["Resources"]["ChatApi"]["Properties"]["Body"]["paths"]["/{proxy+}"]
    return method["x-amazon-apigateway-any-method"]["security"]


@pytest.mark.parametrize("auth", ["IAM", "COGNITO", "NONE"])
def test_template_translates_for_each_api_auth(auth: str) -> None:
    translated = _translate(ApiAuth=auth)

    resources = translated["Resources"]
    assert resources["ChatApi"]["Type"] == "AWS::ApiGateway::RestApi"
    integration = resources["ChatApi"]["Properties"]["Body"]["paths"]["/{proxy+}"][
        "x-amazon-apigateway-any-method"
    ]["x-amazon-apigateway-integration"]
    assert integration["responseTransferMode"] == "STREAM"
    assert "response-streaming-invocations" in integration["uri"]["Fn::Sub"]
    # IAM by default; Cognito and none only when asked for, chosen by condition at deploy.
    assert _security(translated) == {
        "Fn::If": ["UseIam", [{"sigv4": []}], {"Fn::If": ["UseCognito", [{"cognito": []}], []]}]
    }
    assert translated["Conditions"]["UseIam"] == {"Fn::Equals": [{"Ref": "ApiAuth"}, "IAM"]}


def test_api_auth_defaults_to_iam() -> None:
    template = (REPO / "template.yaml").read_text()
    block = template[template.index("  ApiAuth:") :]
    assert "Default: IAM" in block[: block.index("Description")]
