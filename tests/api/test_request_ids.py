"""Each chat API request has an id: API Gateway's when the Web Adapter forwards one, in the
X-Request-Id header and in every JSON log line of the request; one line per chat answer."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from docchat.answer.backend import ChatBackend
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.search.catalog import Catalog
from docchat.search.library import Library, SearchResult
from tests.api.test_server import Server
from tests.chatkit import SEARCH, ScriptedModel, library_of, tuned_config

QUESTION = "When did the new bridge open? Quokka marmalade"
# What the Lambda Web Adapter forwards from API Gateway in `x-amzn-request-context`: the
# event's requestContext as JSON
# (https://awslabs.github.io/aws-lambda-web-adapter/features/request-context.html), for a REST
# API as https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html
# shows it (abridged).
GATEWAY_ID = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"
GATEWAY_CONTEXT = {
    "accountId": "123456789012",
    "apiId": "1234567890",
    "httpMethod": "POST",
    "path": "/Prod/chat",
    "resourcePath": "/chat",
    "stage": "Prod",
    "requestId": GATEWAY_ID,
    "extendedRequestId": "c6af9ac6-7b61-11e6",
    "requestTime": "09/Apr/2015:12:34:56 +0000",
    "requestTimeEpoch": 1428582896000,
    "identity": {"sourceIp": "203.0.113.7", "userAgent": "curl/8.5.0"},
}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class ProbedLibrary(Library):
    """Logs through docchat's module logger on each search (the agent runs the first one on a
    thread of its own), and fails the search when told to."""

    fail = False

    def search(
        self,
        query: str,
        *,
        top_k: int,
        doc_ids: Sequence[str] | None = None,
        catalog: Catalog | None = None,
    ) -> SearchResult:
        logging.getLogger("docchat.search.library").warning("search probe")
        if self.fail:
            raise RuntimeError("the index broke")
        return super().search(query, top_k=top_k, doc_ids=doc_ids, catalog=catalog)


@pytest.fixture
def library(tmp_path: Any) -> ProbedLibrary:
    plain = library_of(tmp_path / "i.sqlite3", {"bridges": ["A new bridge opened in 2004."]})
    return ProbedLibrary(
        index=plain.index, embedder=plain.embedder, registry=plain.registry, **SEARCH
    )


def _model() -> ScriptedModel:
    search = ToolUse(id="t1", name="search_documents", input={"query": "new bridge"})
    return ScriptedModel(
        [
            [search, TurnEnd("tool_use", 12, 3)],
            [TextDelta("It opened in 2004 [1]."), TurnEnd("end_turn", 40, 9)],
        ]
    )


@pytest.fixture
def served(library: ProbedLibrary) -> Iterator[Server]:
    backend = ChatBackend(library=library, model=_model(), config=tuned_config())
    with Server(backend) as server:
        yield server


def _chat(server: Server, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"messages": [{"role": "user", "content": QUESTION}]}
    return httpx.post(f"{server.url}/chat", json=body, headers=headers or {}, timeout=30)


def _log_lines(out: str) -> list[dict[str, Any]]:
    """The JSON log lines written to stdout."""
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_chat_returns_and_logs_the_api_gateway_request_id(
    served: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a request the Web Adapter forwarded from API Gateway
    capsys.readouterr()
    headers = {"x-amzn-request-context": json.dumps(GATEWAY_CONTEXT)}

    # When the chat answers
    response = _chat(served, headers)

    # Then the client gets API Gateway's id back
    assert response.status_code == 200, response.text
    assert response.headers["X-Request-Id"] == GATEWAY_ID
    # and every log line of the request carries it: the library's (on the agent's search
    # thread), the answer's and the request's
    lines = _log_lines(capsys.readouterr().out)
    messages = [line["message"] for line in lines]
    assert messages == ["search probe", "chat answer", "request"], lines
    assert {line["correlation_id"] for line in lines} == {GATEWAY_ID}
    assert {line["service"] for line in lines} == {"docchat"}


def test_the_chat_answer_line_has_mode_tokens_and_timings_but_no_text(
    served: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()

    response = _chat(served)

    out = capsys.readouterr().out
    [answer] = [line for line in _log_lines(out) if line["message"] == "chat answer"]
    assert response.headers["X-Request-Id"] == answer["correlation_id"]
    assert UUID.fullmatch(answer["correlation_id"])  # made up: no API Gateway context
    assert {
        k: answer[k] for k in ("route", "mode", "outcome", "input_tokens", "output_tokens")
    } == {
        "route": "/chat",
        "mode": "model",
        "outcome": "done",
        "input_tokens": 52,
        "output_tokens": 12,
    }
    assert "error_code" not in answer
    assert all(isinstance(answer[k], float) for k in ("total_ms", "retrieval_ms", "first_token_ms"))
    # never the question, the answer or the document's text
    for secret in ("Quokka", "2004", "bridge opened"):
        assert secret not in out


def test_a_failed_chat_logs_its_error_code_and_the_agents_traceback_under_the_request_id(
    served: Server, library: ProbedLibrary, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a library whose search breaks
    library.fail = True
    capsys.readouterr()

    # When the chat answers (with an error event)
    response = _chat(served)

    # Then the agent's own log line and the answer's share the request's id
    lines = _log_lines(capsys.readouterr().out)
    rid = response.headers["X-Request-Id"]
    by_message = {line["message"]: line for line in lines}
    assert {"search probe", "chat failed", "chat answer", "request"} <= set(by_message), lines
    assert {line["correlation_id"] for line in lines} == {rid}
    answer = by_message["chat answer"]
    assert (answer["outcome"], answer["error_code"]) == ("error", "internal")


def test_requests_get_different_ids_and_an_unusable_context_is_not_trusted(
    served: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    first = httpx.get(f"{served.url}/documents", timeout=10)
    second = httpx.get(
        f"{served.url}/documents",
        headers={"x-amzn-request-context": json.dumps({"requestId": 'x"\n{"forged": 1}'})},
        timeout=10,
    )
    third = httpx.get(
        f"{served.url}/documents", headers={"x-amzn-request-context": "not json"}, timeout=10
    )

    ids = [r.headers["X-Request-Id"] for r in (first, second, third)]
    assert all(UUID.fullmatch(i) for i in ids) and len(set(ids)) == 3, ids
    lines = [line for line in _log_lines(capsys.readouterr().out) if line["message"] == "request"]
    assert [(line["path"], line["status"], line["correlation_id"]) for line in lines] == [
        ("/documents", 200, i) for i in ids
    ]
