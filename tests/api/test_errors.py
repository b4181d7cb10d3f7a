"""One mapping from every DocchatError to its HTTP status, and one JSON error shape with the
request id for every error a route or the server itself answers: the routes' own refusals,
an index failing during GET /documents, a body too large (declared or streamed), an unknown
route, a method not allowed (with Allow), HEAD wherever GET, an unexpected exception. The
OpenAPI schema lists each route's statuses and content types."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from docchat.answer.backend import ChatBackend
from docchat.errors import (
    REGISTRY,
    DocchatError,
    IndexCorruptError,
    SearchIndexUnavailableError,
)
from docchat.search.library import Library
from docchat.serve.app import MAX_BODY_BYTES, create_app
from docchat.serve.errors import STATUS, status_of
from tests.chatkit import library, tuned_config

__all__ = ["library"]  # the fixture


class FailingIndex:
    """A registry whose every read fails as the OpenSearch adapter fails when overloaded."""

    def __init__(self, error: DocchatError) -> None:
        self.error = error

    def documents(self) -> list[object]:
        raise self.error

    def document(self, doc_id: str) -> None:
        raise self.error


@pytest.fixture
def client(library: Library) -> Iterator[TestClient]:
    backend = ChatBackend(library=library, model=None, config=tuned_config())
    with TestClient(create_app(lambda: backend), raise_server_exceptions=False) as test_client:
        yield test_client


def _error(response: Any) -> dict[str, Any]:
    """The error of a response in the API's shape, checked to carry the response's request id."""
    assert response.headers["content-type"] == "application/json"
    error: dict[str, Any] = response.json()["error"]
    assert error["status"] == response.status_code
    assert error["request_id"] == response.headers["x-request-id"]
    return error


def test_every_registered_error_has_a_status_chosen_for_it_or_its_family() -> None:
    # Each family (a class directly under DocchatError) is in the mapping, so that a new one
    # cannot quietly become a 500
    families = {c for c in REGISTRY.values() if c.__bases__ == (DocchatError,)}
    assert sorted(c.__name__ for c in families - STATUS.keys()) == []
    assert all(400 <= status_of(c) <= 599 for c in REGISTRY.values())
    # and a subclass takes its own status, or its nearest listed base's
    assert status_of(IndexCorruptError) == 500
    assert status_of(SearchIndexUnavailableError) == 503
    assert status_of(REGISTRY["index_not_ready"]) == 503


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (SearchIndexUnavailableError("the search index is overloaded: retry shortly"), 503),
        (IndexCorruptError("the index /srv/docchat/index.sqlite3 is damaged: delete it"), 500),
    ],
    ids=["index-unavailable", "index-corrupt"],
)
def test_an_index_failure_during_get_documents_is_json_with_its_message(
    library: Library, error: DocchatError, status: int
) -> None:
    # Given a registry that fails (before: a text/plain 500 "Internal Server Error")
    library.registry = FailingIndex(error)  # type: ignore[assignment]
    backend = ChatBackend(library=library, model=None, config=tuned_config())
    client = TestClient(create_app(lambda: backend), raise_server_exceptions=False)

    response = client.get("/documents")

    assert response.status_code == status
    said = _error(response)
    assert said["code"] == error.code
    assert said["message"].endswith(": retry shortly" if status == 503 else ": delete it")
    assert "/srv/docchat" not in said["message"]  # the server's paths stay in its log


def test_an_unexpected_exception_is_a_json_500_with_the_request_id(library: Library) -> None:
    library.registry = FailingIndex(RuntimeError("boom"))  # type: ignore[arg-type]
    backend = ChatBackend(library=library, model=None, config=tuned_config())
    client = TestClient(create_app(lambda: backend), raise_server_exceptions=False)

    response = client.get("/documents")

    assert response.status_code == 500
    said = _error(response)
    assert said["code"] == "internal" and "boom" not in said["message"]


def test_a_declared_body_over_the_limit_is_a_json_413(client: TestClient) -> None:
    # A Content-Length past the limit (before: text/plain "Content Too Large", no request id)
    response = client.post(
        "/chat",
        content=b"x" * (MAX_BODY_BYTES + 1),
        headers={"content-type": "application/json"},
    )

    assert response.status_code == 413
    assert _error(response)["message"] == f"the request body is larger than {MAX_BODY_BYTES} bytes"
    assert response.headers["connection"] == "close"


def test_a_streamed_body_over_the_limit_is_a_json_413(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(4):
            yield b"x" * (MAX_BODY_BYTES // 2)

    response = client.post("/chat", content=chunks(), headers={"content-type": "application/json"})

    assert response.status_code == 413
    assert "larger than" in _error(response)["message"]


def test_an_unknown_route_is_a_json_404(client: TestClient) -> None:
    response = client.get("/no/such/route")

    assert response.status_code == 404
    assert _error(response)["message"] == "there is no /no/such/route here: /docs lists the API"


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/documents", "GET, HEAD, POST"),
        ("POST", "/documents/abc", "DELETE, GET, HEAD"),
        ("GET", "/documents/upload-url", "POST"),
        ("DELETE", "/chat", "POST"),
        ("POST", "/static/app.js", "GET, HEAD"),
        ("PATCH", "/v1/models", "GET, HEAD"),
    ],
)
def test_a_method_not_allowed_names_the_allowed_ones(
    client: TestClient, method: str, path: str, allowed: str
) -> None:
    response = client.request(method, path)

    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    if path.startswith("/v1/"):  # OpenAI's shape there
        assert response.json()["error"]["type"] == "invalid_request_error"
    else:
        assert _error(response)["message"].endswith(f"use {allowed}")


@pytest.mark.parametrize(
    "path", ["/", "/config", "/documents", "/documents/bridges", "/v1/models", "/static/app.js"]
)
def test_head_answers_wherever_get_does(client: TestClient, path: str) -> None:
    got, head = client.get(path), client.head(path)

    assert (head.status_code, got.status_code) == (200, 200)
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]


def test_a_route_refusal_carries_its_code_and_request_id(client: TestClient) -> None:
    response = client.get("/documents/nope")

    assert response.status_code == 404
    said = _error(response)
    assert said["code"] == "not_found" and "GET /documents lists them" in said["message"]


def test_invalid_bodies_answer_in_the_error_shape(client: TestClient) -> None:
    malformed = client.post(
        "/chat", content=b"\xff\xfe", headers={"content-type": "application/json"}
    )
    wrong_type = client.post(
        "/chat", json={"messages": [{"role": "user", "content": "hi"}], "after": "2"}
    )

    assert malformed.status_code == 400
    assert _error(malformed)["message"].startswith("the body is not valid JSON")
    # Strings are not numbers: the API takes what its schema says, no more
    assert wrong_type.status_code == 422
    assert _error(wrong_type)["details"][0]["field"] == "after"


def _responses(schema: dict[str, Any], path: str, method: str) -> dict[str, set[str]]:
    """Each status an operation documents, with the content types it names."""
    responses = schema["paths"][path][method]["responses"]
    return {status: set(answer.get("content", {})) for status, answer in responses.items()}


def test_the_schema_lists_each_routes_statuses_and_content_types(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()

    chat = _responses(schema, "/chat", "post")
    assert chat["200"] == {"text/event-stream"}
    for status in ("400", "404", "409", "413", "422", "500", "503"):
        assert chat[status] == {"application/json"}, status
    completions = _responses(schema, "/v1/chat/completions", "post")
    assert completions["200"] == {"application/json", "text/event-stream"}
    assert {"400", "404", "413"} <= completions.keys()
    upload = _responses(schema, "/documents", "post")
    assert {"202", "400", "409", "413", "415", "422"} <= upload.keys()
    # A PDF inline, any other type as a download, or (cloud) a presigned URL
    assert _responses(schema, "/documents/{doc_id}/file", "get")["200"] == {
        "application/pdf",
        "application/octet-stream",
        "application/json",
    }
    assert "404" in _responses(schema, "/v1/models/{model}", "get")
    # The error bodies are the error shape, request id included
    error = schema["paths"]["/chat"]["post"]["responses"]["413"]["content"]["application/json"]
    assert "request_id" in error["schema"]["properties"]["error"]["properties"]


def test_the_schema_lists_every_body_type_an_upload_may_declare(client: TestClient) -> None:
    # The route takes a PDF's types, bytes, or the named format's own type (text/plain never)
    schema = client.get("/openapi.json").json()
    body = schema["paths"]["/documents"]["post"]["requestBody"]["content"]

    assert {"application/pdf", "application/octet-stream", "text/markdown", "text/html"} <= set(
        body
    )
    assert "application/vnd.openxmlformats-officedocument.wordprocessingml.document" in body
    assert "text/plain" not in body
    assert "415" in schema["paths"]["/documents"]["post"]["responses"]
