"""The page's Content-Security-Policy: sent by the app itself on the page (so locally and, through
API Gateway, in the cloud), fitted to the page's inline script, pdf.js's module worker and the
Cognito domain the page signs in with, and forbidding other sites to frame it. Chromium checks
that the page, viewer and sign-in still work under it in tests/web/test_page_policy.py."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from fastapi.testclient import TestClient

from docchat.answer.backend import ChatBackend
from docchat.serve.app import SignIn, create_app
from docchat.serve.policy import page_headers
from docchat.serve.state import WEB
from docchat.wiring.cloud import cloud_app

DOMAIN = "https://docchat-1b2c.auth.eu-west-1.amazoncognito.com"


def _no_backend() -> ChatBackend:
    raise AssertionError("the page must not build the backend")


def _directives(policy: str) -> dict[str, list[str]]:
    parts = (d.split() for d in policy.split(";") if d.strip())
    return {name: values for name, *values in parts}


def _inline_script_hashes() -> list[str]:
    """The hash sources of index.html's inline scripts, worked out here independently."""
    html = (WEB / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", html, re.DOTALL)
    return [
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in scripts
    ]


def test_the_page_is_sent_with_a_policy_that_forbids_framing() -> None:
    response = TestClient(create_app(_no_backend)).get("/")

    assert response.status_code == 200
    policy = _directives(response.headers["content-security-policy"])
    assert policy["frame-ancestors"] == ["'none'"]
    assert response.headers["x-frame-options"] == "DENY"
    assert policy["default-src"] == ["'none'"]
    # The page's own scripts and its inline one (by hash, never 'unsafe-inline'); pdf.js's
    # module worker from /static; fetches only to the API itself without a sign-in
    assert policy["script-src"] == ["'self'", *_inline_script_hashes()]
    assert _inline_script_hashes()
    assert policy["worker-src"] == ["'self'"]
    assert policy["connect-src"] == ["'self'"]
    assert "'unsafe-inline'" not in response.headers["content-security-policy"]
    assert "'unsafe-eval'" not in response.headers["content-security-policy"]


def test_the_policy_lets_the_page_fetch_cognitos_token_endpoint() -> None:
    sign_in = SignIn(mode="cognito", domain=DOMAIN, client_id="abc", scopes="openid email")

    response = TestClient(create_app(_no_backend, sign_in=lambda: sign_in)).get("/")

    policy = _directives(response.headers["content-security-policy"])
    assert policy["connect-src"] == ["'self'", DOMAIN]


def test_the_cloud_app_sends_the_policy_with_its_cognito_domain_and_bucket(
    monkeypatch: pytest.MonkeyPatch, chat_function_env: None
) -> None:
    monkeypatch.setenv("DOCCHAT_API_AUTH", "COGNITO")
    monkeypatch.setenv("DOCCHAT_AUTH_DOMAIN", DOMAIN)
    monkeypatch.setenv("DOCCHAT_AUTH_CLIENT_ID", "abc123")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("DOCCHAT_DOCUMENTS_BUCKET", "docchat-documents-1b2c")

    response = TestClient(cloud_app()).get("/")

    # The presigned uploads and views go to the bucket's regional virtual-hosted origin
    policy = _directives(response.headers["content-security-policy"])
    assert policy["connect-src"] == [
        "'self'",
        DOMAIN,
        "https://docchat-documents-1b2c.s3.eu-west-1.amazonaws.com",
    ]
    assert policy["frame-ancestors"] == ["'none'"]


def test_inline_styles_are_allowed_by_hash_too() -> None:
    headers = page_headers("<style>p{}</style><script src='a.js'></script>", connect=[])

    policy = _directives(headers["Content-Security-Policy"])
    digest = base64.b64encode(hashlib.sha256(b"p{}").digest()).decode()
    assert policy["style-src"] == ["'self'", f"'sha256-{digest}'"]
    assert policy["script-src"] == ["'self'"]  # a script with a src is not inline
