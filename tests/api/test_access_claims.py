"""The `cognito:groups` claim in each shape API Gateway passes it (serve/access.py cites the
pages, read 2026-11-27): the COGNITO_USER_POOLS authorizer of a REST API (this stack's) gives
every claim as a string, one group as its name and several as "a,b"; a REST API JWT authorizer
gives the JSON type to a Lambda proxy integration (a list) and JSON text elsewhere
('["user","editor"]', AWS's own example); HTTP APIs give "[a b]"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from docchat.answer.backend import ChatBackend
from docchat.config import Settings
from docchat.serve.access import NO_MAPPING, GroupsMap, claimed_groups, cognito_access_for
from docchat.serve.app import create_app
from docchat.serve.identity import REQUEST_CONTEXT, cognito_user
from tests.chatkit import local_parts


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


def test_a_request_to_mcp_reads_the_request_context_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the chat function's app (Cognito user and groups) and a call to /mcp over the stage
    context = {"authorizer": {"claims": {"sub": "u1", "cognito:groups": "finance"}}}
    header = json.dumps(context)
    app = create_app(
        _no_backend,
        access_of=cognito_access_for(lambda: NO_MAPPING, cognito_user),
    )
    parsed: list[str] = []
    loads = json.loads

    def counted(text: Any, *args: Any, **kwargs: Any) -> Any:
        if text == header:
            parsed.append(text)
        return loads(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", counted)

    # When it starts an MCP session
    with TestClient(app) as client:
        response = client.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            },
            headers={REQUEST_CONTEXT: header, "accept": "application/json, text/event-stream"},
        )

    # Then it is answered, and the header was parsed once for the user, the groups and the page
    assert response.status_code == 200, response.text
    assert response.json()["result"]["serverInfo"]["name"] == "docchat"
    assert len(parsed) == 1


def _no_backend() -> ChatBackend:
    raise AssertionError("starting a session reads no document")


def test_a_route_reads_the_callers_rights_once(tmp_path: Path) -> None:
    # Given the chat function's access (Cognito groups mapped by a mapping read from S3)
    context = {"authorizer": {"claims": {"sub": "u1", "cognito:groups": "finance"}}}
    read: list[int] = []

    def mapping() -> GroupsMap:
        read.append(1)
        return GroupsMap.model_validate(
            {"groups": {"finance": {"read": ["finance"], "write": ["finance"]}}}
        )

    parts = local_parts(Settings(data_dir=tmp_path))
    app = create_app(lambda: parts.backend, access_of=cognito_access_for(mapping, cognito_user))

    # When the caller lists their collections (what they may read, then each one's documents)
    with TestClient(app) as client:
        response = client.get("/collections", headers={REQUEST_CONTEXT: json.dumps(context)})

    # Then one reading of the mapping decided both
    assert response.status_code == 200, response.text
    assert response.json()["collections"] == [{"name": "finance", "documents": 0, "write": True}]
    assert len(read) == 1
    parts.index.close()
