"""The template as `sam deploy` translates it, for every ApiAuth choice: one REGIONAL stage with
its throttling and tracing, the page's open routes and every other route behind the authorizer,
the Cognito sign-in resources, and no dependency cycle."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from docchat.config import Settings
from tests.conftest import REPO

SAM_PYTHON = REPO / ".venv-sam" / "bin" / "python"
AUTHS = ["COGNITO", "IAM", "NONE"]
# The page, its files and sign-in settings, and where MCP clients read /mcp's authorization
# server before they sign in (RFC 9728).
OPEN = {
    ("/", "get"),
    ("/static/{proxy+}", "get"),
    ("/auth-config", "get"),
    ("/.well-known/oauth-protected-resource", "get"),
}
SECURED = {"COGNITO": [{"cognito": []}], "IAM": [{"sigv4": []}], "NONE": []}
METHODS = {
    "get",
    "put",
    "post",
    "delete",
    "options",
    "head",
    "patch",
    "x-amazon-apigateway-any-method",
}


@cache
def _translate(auth: str = "", **parameters: str) -> dict[str, Any]:
    """The template as SAM translates it for these parameters (ApiAuth=`auth` when given)."""
    if auth:
        parameters["ApiAuth"] = auth
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


class Resolved:
    """Evaluates the conditions (Fn::If, Fn::Equals of parameters, Fn::Not) the way
    CloudFormation does at deploy time for one set of parameters; leaves other intrinsics be."""

    def __init__(self, template: dict[str, Any], **parameters: str) -> None:
        self.template = template
        self.parameters = {
            name: spec.get("Default") for name, spec in template["Parameters"].items()
        } | parameters

    def condition(self, name: str) -> bool:
        return bool(self.value(self.template["Conditions"][name]))

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.value(item) for item in node]
        if not isinstance(node, dict):
            return node
        if set(node) == {"Fn::If"}:
            name, then, otherwise = node["Fn::If"]
            return self.value(then if self.condition(name) else otherwise)
        if set(node) == {"Fn::Equals"}:
            left, right = (self.scalar(side) for side in node["Fn::Equals"])
            return str(left) == str(right)
        if set(node) == {"Fn::Not"}:
            return not self.value(node["Fn::Not"][0])
        if set(node) == {"Condition"}:
            return self.condition(node["Condition"])
        return {key: self.value(item) for key, item in node.items()}

    def scalar(self, node: Any) -> Any:
        if isinstance(node, dict) and set(node) == {"Ref"}:
            return self.parameters[node["Ref"]]
        return self.value(node)


def _resolved(auth: str) -> tuple[Resolved, dict[str, Any]]:
    """The translated template with ApiAuth=auth, its resources' conditions applied."""
    translated = _translate(auth)
    resolved = Resolved(translated, ApiAuth=auth)
    resources = {
        name: resolved.value(resource)
        for name, resource in translated["Resources"].items()
        if "Condition" not in resource or resolved.condition(resource["Condition"])
    }
    return resolved, resources


def _operations(body: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (path, method): operation
        for path, item in body["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


@pytest.mark.parametrize("auth", AUTHS)
def test_api_has_one_stage_with_throttling_and_tracing(auth: str) -> None:
    _, resources = _resolved(auth)

    stages = [r for r in resources.values() if r["Type"] == "AWS::ApiGateway::Stage"]
    deployments = [r for r in resources.values() if r["Type"] == "AWS::ApiGateway::Deployment"]
    # A Deployment with a StageName creates a stage of its own (SAM's extra "Stage").
    assert [d["Properties"].get("StageName") for d in deployments] == [None]
    assert len(stages) == 1
    stage = stages[0]["Properties"]
    assert stage["StageName"] == "v1"
    assert stage["TracingEnabled"] is True
    assert stage["MethodSettings"] == [
        {
            "HttpMethod": "*",
            "ResourcePath": "/*",
            "ThrottlingBurstLimit": {"Ref": "ApiThrottleBurst"},
            "ThrottlingRateLimit": {"Ref": "ApiThrottleRate"},
        }
    ]


@pytest.mark.parametrize("auth", AUTHS)
def test_api_endpoint_is_regional(auth: str) -> None:
    _, resources = _resolved(auth)

    api = resources["ChatApi"]["Properties"]
    assert api["EndpointConfiguration"] == {"Types": ["REGIONAL"]}
    assert api["Parameters"] == {"endpointConfigurationTypes": "REGIONAL"}


@pytest.mark.parametrize("auth", AUTHS)
def test_only_the_page_and_its_sign_in_settings_are_open(auth: str) -> None:
    _, resources = _resolved(auth)
    body = resources["ChatApi"]["Properties"]["Body"]
    operations = _operations(body)

    assert set(operations) >= OPEN
    assert ("/{proxy+}", "x-amazon-apigateway-any-method") in operations
    for (path, method), operation in operations.items():
        expected = [] if (path, method) in OPEN else SECURED[auth]
        assert operation["security"] == expected, (path, method)
        integration = operation["x-amazon-apigateway-integration"]
        assert integration["type"] == "aws_proxy"
        assert integration["responseTransferMode"] == "STREAM"
        assert integration["uri"]["Fn::Sub"].endswith(
            ":function:${!stageVariables.chatFunction}/response-streaming-invocations"
        )
    schemes = body["components"]["securitySchemes"]
    for requirement in SECURED[auth]:
        assert set(requirement) <= set(schemes)
    if auth == "COGNITO":
        authorizer = schemes["cognito"]["x-amazon-apigateway-authorizer"]
        assert authorizer == {
            "type": "cognito_user_pools",
            "providerARNs": [{"Fn::GetAtt": ["ChatUserPool", "Arn"]}],
        }
    stage = next(r for r in resources.values() if r["Type"] == "AWS::ApiGateway::Stage")
    assert stage["Properties"]["Variables"] == {"chatFunction": {"Ref": "ChatFunction"}}


def test_api_auth_defaults_to_cognito() -> None:
    translated = _translate("COGNITO")

    assert translated["Parameters"]["ApiAuth"]["Default"] == "COGNITO"
    assert Resolved(translated).condition("UseCognito")


def test_page_url_output_ends_with_the_stage_and_a_slash() -> None:
    # Without the slash the page's relative URLs (static/app.js, chat) drop the stage: 403.
    outputs = _translate("COGNITO")["Outputs"]
    page = "https://${ChatApi}.execute-api.${AWS::Region}.amazonaws.com/v1/"

    assert outputs["ChatApiUrl"]["Value"] == {"Fn::Sub": page}
    client = _resolved("COGNITO")[1]["ChatUserPoolClient"]["Properties"]
    assert client["CallbackURLs"] == [{"Fn::Sub": page}]
    assert client["LogoutURLs"] == [{"Fn::Sub": page}]


def test_page_client_is_public_with_code_flow_and_the_e2e_sign_in() -> None:
    _, resources = _resolved("COGNITO")
    client = resources["ChatUserPoolClient"]["Properties"]

    assert client["GenerateSecret"] is False
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["AllowedOAuthScopes"] == ["openid", "email"]
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    assert set(client["ExplicitAuthFlows"]) == {
        "ALLOW_USER_SRP_AUTH",
        "ALLOW_REFRESH_TOKEN_AUTH",
        "ALLOW_ADMIN_USER_PASSWORD_AUTH",
    }
    domain = resources["ChatUserPoolDomain"]["Properties"]
    assert domain["ManagedLoginVersion"] == 2
    assert domain["UserPoolId"] == {"Ref": "ChatUserPool"}
    branding = resources["ChatManagedLoginBranding"]["Properties"]
    assert branding == {
        "UserPoolId": {"Ref": "ChatUserPool"},
        "ClientId": {"Ref": "ChatUserPoolClient"},
        "UseCognitoProvidedValues": True,
    }
    assert resources["ChatUserPool"]["Properties"]["UserPoolTier"] == "ESSENTIALS"


@pytest.mark.parametrize("auth", AUTHS)
def test_chat_function_tells_the_page_how_to_sign_in(auth: str) -> None:
    translated = _translate(auth)
    _, resources = _resolved(auth)
    variables = resources["ChatFunction"]["Properties"]["Environment"]["Variables"]

    assert variables["DOCCHAT_API_AUTH"] == {"Ref": "ApiAuth"}
    names = {k for k in variables if k.startswith("DOCCHAT_AUTH") or k == "DOCCHAT_API_AUTH"}
    for name in names:  # every one is a setting the app reads
        assert name.removeprefix("DOCCHAT_").lower() in Settings.model_fields
    if auth != "COGNITO":
        assert (variables["DOCCHAT_AUTH_DOMAIN"], variables["DOCCHAT_AUTH_CLIENT_ID"]) == ("", "")
        assert "ChatSignInDomain" not in _outputs_for(translated, auth)
        return
    assert variables["DOCCHAT_AUTH_CLIENT_ID"] == {"Ref": "ChatUserPoolClient"}
    # The domain URL is built from the same prefix as the domain resource (the output too).
    prefix_template, prefix_values = resources["ChatUserPoolDomain"]["Properties"]["Domain"][
        "Fn::Sub"
    ]
    url_template, url_values = variables["DOCCHAT_AUTH_DOMAIN"]["Fn::Sub"]
    assert url_values == prefix_values
    assert url_template == f"https://{prefix_template}.auth.${{AWS::Region}}.amazoncognito.com"
    assert _outputs_for(translated, auth)["ChatSignInDomain"]["Value"]["Fn::Sub"] == [
        url_template,
        url_values,
    ]


def _outputs_for(translated: dict[str, Any], auth: str) -> dict[str, Any]:
    resolved = Resolved(translated, ApiAuth=auth)
    return {
        name: output
        for name, output in translated["Outputs"].items()
        if "Condition" not in output or resolved.condition(output["Condition"])
    }


def _references(node: Any) -> set[str]:
    """Logical ids a template node refers to (Ref, Fn::GetAtt, ${...} in Fn::Sub)."""
    found: set[str] = set()
    if isinstance(node, list):
        for item in node:
            found |= _references(item)
    elif isinstance(node, dict):
        for key, item in node.items():
            if key == "Ref":
                found.add(item)
            elif key == "Fn::GetAtt":
                found.add(item[0] if isinstance(item, list) else item.split(".")[0])
            elif key == "Fn::Sub":
                text = item if isinstance(item, str) else item[0]
                found |= {m.split(".")[0] for m in re.findall(r"\$\{([^!][^}]*)\}", text)}
                found |= _references(item[1:] if isinstance(item, list) else [])
            else:
                found |= _references(item)
    return found


@pytest.mark.parametrize("auth", AUTHS)
def test_translated_resources_have_no_dependency_cycle(auth: str) -> None:
    _, resources = _resolved(auth)
    depends = {
        name: (_references(r.get("Properties", {})) | set(_as_list(r.get("DependsOn"))))
        & set(resources)
        for name, r in resources.items()
    }

    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " -> ".join((*path, name))
        if name in done:
            return
        for other in depends[name]:
            visit(other, (*path, name))
        done.add(name)

    for name in resources:
        visit(name, ())
    # The cycle this guards against: client -> API -> function -> client.
    if auth == "COGNITO":
        assert "ChatApi" in depends["ChatUserPoolClient"]
        assert "ChatUserPoolClient" in depends["ChatFunction"]


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def test_samconfig_deploys_with_cognito_sign_in() -> None:
    # `sam deploy` takes samconfig.toml's overrides over the template's defaults.
    config = tomllib.loads((REPO / "samconfig.toml").read_text())
    overrides = config["default"]["deploy"]["parameters"]["parameter_overrides"]

    assert "ApiAuth=COGNITO" in overrides.split()
