"""The `cognito:groups` claim in each shape API Gateway passes it (serve/access.py cites the
pages, read 2026-11-27): the COGNITO_USER_POOLS authorizer of a REST API (this stack's) gives
every claim as a string, one group as its name and several as "a,b"; a REST API JWT authorizer
gives the JSON type to a Lambda proxy integration (a list) and JSON text elsewhere
('["user","editor"]', AWS's own example); HTTP APIs give "[a b]"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.requests import Request

from docchat.serve.access import claimed_groups


def _request(claims: dict[str, Any] | None) -> Request:
    context = {"requestId": "r1", **({"authorizer": {"claims": claims}} if claims else {})}
    headers = [(b"x-amzn-request-context", json.dumps(context).encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers})


@pytest.mark.parametrize(
    ("value", "groups"),
    [
        ("team_manager", ["team_manager"]),  # re:Post: one group, a plain string
        ("finance,admins", ["finance", "admins"]),  # several, COGNITO_USER_POOLS
        (["finance", "admins"], ["finance", "admins"]),  # REST JWT authorizer, Lambda proxy
        ('["user","editor"]', ["user", "editor"]),  # the same as JSON text (AWS's example)
        ("[finance admins]", ["finance", "admins"]),  # HTTP API JWT authorizer
        ("[finance, admins]", ["finance", "admins"]),
        ("", []),
    ],
)
def test_the_groups_claim_in_each_shape(value: Any, groups: list[str]) -> None:
    assert claimed_groups(_request({"sub": "u1", "cognito:groups": value})) == groups


def test_no_claim_or_no_authorizer_is_no_group() -> None:
    assert claimed_groups(_request({"sub": "u1"})) == []
    assert claimed_groups(_request(None)) == []
