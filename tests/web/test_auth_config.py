"""GET /auth-config tells the page how to sign in, from the settings the stack sets, without
building the backend (it is open in the cloud: it must not reach AWS)."""

from __future__ import annotations

from typing import Literal

import pytest
from fastapi.testclient import TestClient

from docchat.answer.backend import ChatBackend
from docchat.config import Settings
from docchat.errors import ConfigError
from docchat.serve.app import SignIn, create_app
from docchat.wiring.cloud import cloud_app

DOMAIN = "https://docchat-1b2c.auth.eu-west-1.amazoncognito.com"


def _no_backend() -> ChatBackend:
    raise AssertionError("the sign-in settings must not build the backend")


def test_sign_in_from_cognito_settings() -> None:
    settings = Settings.from_env(
        {
            "DOCCHAT_API_AUTH": "cognito",
            "DOCCHAT_AUTH_DOMAIN": DOMAIN + "/",
            "DOCCHAT_AUTH_CLIENT_ID": "abc123",
            "AWS_REGION": "eu-west-1",
        }
    )

    assert SignIn.from_settings(settings) == SignIn(
        mode="cognito", region="eu-west-1", domain=DOMAIN, client_id="abc123", scopes="openid email"
    )


@pytest.mark.parametrize(("auth", "mode"), [("IAM", "iam"), ("NONE", "none"), (None, "none")])
def test_sign_in_without_cognito(auth: str | None, mode: Literal["iam", "none"]) -> None:
    environ = {"AWS_REGION": "us-east-1"} | ({"DOCCHAT_API_AUTH": auth} if auth else {})

    assert SignIn.from_settings(Settings.from_env(environ)) == SignIn(mode=mode, region="us-east-1")


@pytest.mark.parametrize(
    ("environ", "problem"),
    [
        ({"DOCCHAT_API_AUTH": "COGNITO"}, "needs DOCCHAT_AUTH_DOMAIN and DOCCHAT_AUTH_CLIENT_ID"),
        (
            {
                "DOCCHAT_API_AUTH": "COGNITO",
                "DOCCHAT_AUTH_DOMAIN": "http://docchat.example",
                "DOCCHAT_AUTH_CLIENT_ID": "abc",
            },
            "must be an https URL",
        ),
        ({"DOCCHAT_API_AUTH": "SAML"}, "DOCCHAT_API_AUTH"),
    ],
)
def test_incomplete_sign_in_settings_say_what_to_set(environ: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        Settings.from_env(environ)


def test_auth_config_route_answers_without_the_backend() -> None:
    sign_in = SignIn(mode="cognito", domain=DOMAIN, client_id="abc123", scopes="openid email")
    client = TestClient(create_app(_no_backend, sign_in=lambda: sign_in))

    response = client.get("/auth-config")

    assert response.status_code == 200
    assert response.json() == {
        "mode": "cognito",
        "region": "",
        "domain": DOMAIN,
        "client_id": "abc123",
        "scopes": "openid email",
    }
    assert TestClient(create_app(_no_backend)).get("/auth-config").json()["mode"] == "none"


def test_cloud_app_reads_the_sign_in_from_the_stack_environment(
    monkeypatch: pytest.MonkeyPatch, chat_function_env: None
) -> None:
    monkeypatch.setenv("DOCCHAT_API_AUTH", "COGNITO")
    monkeypatch.setenv("DOCCHAT_AUTH_DOMAIN", DOMAIN)
    monkeypatch.setenv("DOCCHAT_AUTH_CLIENT_ID", "abc123")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")

    body = TestClient(cloud_app()).get("/auth-config").json()

    assert (body["mode"], body["domain"], body["client_id"]) == ("cognito", DOMAIN, "abc123")
    assert body["region"] == "eu-west-1"
