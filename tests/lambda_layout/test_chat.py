"""The built chat function, started the way the Lambda Web Adapter starts it, in the Lambda
layout: run.sh from the build's task root with the function's environment and no PYTHONPATH,
the layers only at /opt/python. The adapter's readiness polling and streaming are emulated
(tests/lambda_layout/harness.py, WebAdapter).

The model is the template's: Claude on Bedrock, answered by the loopback stub replaying a recorded
tool-use turn and a recorded answer (tests/lambda_layout/bedrock_stub.py).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lambda_layout.bedrock_stub import BedrockStub
from tests.lambda_layout.conftest import Stack, make_stack
from tests.lambda_layout.harness import (
    Emulator,
    Layout,
    NotReady,
    WebAdapter,
    free_port,
    lambda_environment,
    sse_events,
    template_environment,
)
from tests.lambda_layout.opensearch_stub import OpenSearchStub
from tests.lambda_layout.test_rie import DOC_ID, _event

INDEXING = ("register", "convert", "chunk", "embed", "index", "finalize")
READY_WITHIN_S = 30  # the cold start imports fastapi, anthropic, boto3 on a loaded machine
UNREACHABLE = "http://127.0.0.1:9"  # nothing listens on the discard port
QUESTION = "What does the DMCA say about circumvention of technological protection measures?"


def chat_environment(layout: Layout, stack: Stack, **overrides: str) -> dict[str, str]:
    """The chat function's environment: Lambda's, the template's, the harness's, `overrides`."""
    variables = {
        **template_environment(layout, "chat", stack.known),
        **stack.extra,
        # A free port: other test runs may share this machine (the template says 8080).
        "AWS_LWA_PORT": str(free_port()),
        **overrides,
    }
    return lambda_environment(layout, "chat", variables=variables)


@pytest.fixture(scope="module")
def stack(
    moto_endpoint: str,
    bedrock: BedrockStub,
    opensearch: OpenSearchStub,
    tmp_path_factory: pytest.TempPathFactory,
) -> Stack:
    tmp = tmp_path_factory.mktemp("chat")
    return make_stack(
        "chat",
        tmp,
        moto_endpoint=moto_endpoint,
        bedrock_endpoint=bedrock.endpoint,
        opensearch_endpoint=opensearch.endpoint,
    )


@pytest.fixture(scope="module")
def indexed(layout: Layout, stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Stack:
    """examples/pdfs/dmca.pdf indexed by the built ingestion handlers, in pipeline order."""
    emulator = Emulator(layout, stack.known, stack.extra, tmp_path_factory.mktemp("chat-ingest"))
    for name in INDEXING:
        emulator.invoke(name, _event(name)).ok()
    return stack


@pytest.fixture(scope="module")
def chat(
    layout: Layout, indexed: Stack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebAdapter]:
    log = tmp_path_factory.mktemp("chat-app") / "chat.log"
    adapter = WebAdapter(layout, chat_environment(layout, indexed), log)
    adapter.start()
    try:
        adapter.wait_ready(READY_WITHIN_S)
        yield adapter
    finally:
        adapter.stop()


def test_chat_readiness_answers_with_no_aws_reachable(
    layout: Layout, stack: Stack, tmp_path: Path
) -> None:
    # Given the built chat function with every AWS endpoint on a closed port
    env = chat_environment(
        layout,
        stack,
        AWS_ENDPOINT_URL=UNREACHABLE,
        AWS_ENDPOINT_URL_BEDROCK_RUNTIME=UNREACHABLE,
        ANTHROPIC_BEDROCK_BASE_URL=UNREACHABLE,
    )
    adapter = WebAdapter(layout, env, tmp_path / "chat.log")
    adapter.start()
    try:
        # When the adapter polls the template's readiness path, Then the app becomes ready
        adapter.wait_ready(READY_WITHIN_S)
        ready = adapter.request("GET", env["AWS_LWA_READINESS_CHECK_PATH"], timeout=10)
        # and /health says, in JSON, which dependency failed (to a signed-in caller: it is
        # behind the stage's authorizer as every route, and counts what the caller may read)
        health = adapter.request("GET", "/health", timeout=120, claims=SIGNED_IN)
    finally:
        adapter.stop()

    assert ready.status == 200
    assert health.status == 503, health.body
    assert health.headers["content-type"] == "application/json"
    assert b'"registry"' in health.body and b'"failed"' in health.body


# A signed-in user as the template's Cognito authorizer passes them: every route names its caller
# (what they may read follows from their groups; none here, so the default collection).
SIGNED_IN = {"sub": "sub-cy", "token_use": "id"}


def test_chat_streams_a_cited_answer_through_the_adapter(
    chat: WebAdapter, bedrock: BedrockStub
) -> None:
    # Given the function ready behind the adapter, over the PDF the built handlers indexed
    started = time.monotonic()
    asked = len(bedrock.claude_requests)

    # When a question is sent to /chat
    answer = chat.request(
        "POST", "/chat", {"messages": [{"role": "user", "content": QUESTION}]}, claims=SIGNED_IN
    )

    # Then the Server-Sent Events stream through as Claude's turns arrive, cited, ending in done
    assert answer.status == 200, answer.body
    assert answer.headers["content-type"].startswith("text/event-stream")
    # with API Gateway's request id, as the adapter forwarded it, in the response and the log
    assert answer.headers["x-request-id"] == answer.request_id
    log = chat.log.read_text()
    logged = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    answers = [line for line in logged if line.get("message") == "chat answer"]
    assert [a["correlation_id"] for a in answers[-1:]] == [answer.request_id], logged[-5:]
    assert QUESTION not in log
    assert "content-length" not in {k.lower() for k in answer.headers}, "buffered, not streamed"
    assert len(answer.chunks) > 3, f"arrived in {len(answer.chunks)} pieces: buffered?"
    events = sse_events(answer.body)
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "done", kinds
    assert {"tool_call", "sources", "delta", "citations"} <= set(kinds), kinds
    text = "".join(data["text"] for kind, data in events if kind == "delta")
    assert "Tighten the M8 cylinder head bolts" in text  # text_turn.sse, replayed
    citations = next(data for kind, data in events if kind == "citations")["citations"]
    assert citations and {c["doc_id"] for c in citations} == {DOC_ID}, citations
    assert time.monotonic() - started < 60
    # and Claude was asked twice (the search, then the answer) for the template's model
    turns = bedrock.claude_requests[asked:]
    model_id = chat.env["DOCCHAT_MODEL_ID"]
    assert [model for model, _ in turns] == [model_id, model_id]
    assert turns[0][1]["anthropic_version"] == "bedrock-2023-05-31"


def test_chat_searches_the_opensearch_the_handlers_wrote(
    chat: WebAdapter, opensearch: OpenSearchStub, indexed: Stack
) -> None:
    # Given the handlers' chunks in the collection's stand-in, When a question is asked
    asked = len(opensearch.requests)
    answer = chat.request(
        "POST", "/chat", {"messages": [{"role": "user", "content": QUESTION}]}, claims=SIGNED_IN
    )

    # Then the chat function searched it (k-NN, BM25, then the chunks), and no function made
    # an embedded index where DOCCHAT_DATA_DIR points
    assert answer.status == 200, answer.body
    searches = [path for method, path in opensearch.requests[asked:] if method == "POST"]
    assert searches and all(path.endswith("/_search") for path in searches), searches
    assert len(searches) >= 3, searches
    assert not indexed.data_dir.exists()


def test_chat_with_an_empty_opensearch_endpoint_never_gets_ready(
    layout: Layout, stack: Stack, tmp_path: Path
) -> None:
    # Given the chat function with DOCCHAT_OPENSEARCH_ENDPOINT empty (it used to fall back to
    # an embedded SQLite index inside the Lambda)
    env = chat_environment(layout, stack, DOCCHAT_OPENSEARCH_ENDPOINT="")
    adapter = WebAdapter(layout, env, tmp_path / "chat.log")

    # When the adapter starts it, Then uvicorn's factory fails, naming the variable, and the
    # function never becomes ready
    adapter.start()
    try:
        with pytest.raises(NotReady, match="the chat function needs DOCCHAT_OPENSEARCH_ENDPOINT"):
            adapter.wait_ready(READY_WITHIN_S)
    finally:
        adapter.stop()
    assert not stack.data_dir.exists()


def test_chat_sends_the_pages_security_policy_through_the_adapter(chat: WebAdapter) -> None:
    # The app sets it on the page, so API Gateway passes it on with the response's headers
    page = chat.request("GET", "/")

    assert page.status == 200, page.body
    headers = {name.lower(): value for name, value in page.headers.items()}
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"


def test_chat_documents_lists_what_the_handlers_indexed(chat: WebAdapter) -> None:
    listed = chat.request("GET", "/documents", claims=SIGNED_IN)

    assert listed.status == 200, listed.body
    assert DOC_ID in listed.body.decode()
    assert '"INDEXED"' in listed.body.decode()


def test_chat_keeps_each_signed_in_users_conversations_in_the_stacks_table(
    chat: WebAdapter,
) -> None:
    # Given two users as the template's Cognito authorizer passes them (by their `sub`)
    ana, bo = {"sub": "sub-ana", "token_use": "id"}, {"sub": "sub-bo", "token_use": "id"}
    body = {"messages": [{"role": "user", "content": QUESTION}], "conversation_id": "c-1"}

    # When Ana asks within a conversation
    answer = chat.request("POST", "/chat", body, claims=ana)
    assert answer.status == 200, answer.body
    assert sse_events(answer.body)[-1][0] == "done"

    # Then it is in the stack's conversations table under her sub, with the cited answer
    listed = chat.request("GET", "/conversations", claims=ana)
    assert listed.status == 200, listed.body
    assert [c["id"] for c in json.loads(listed.body)["conversations"]] == ["c-1"]
    saved = json.loads(chat.request("GET", "/conversations/c-1", claims=ana).body)
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant"]
    assert {c["doc_id"] for c in saved["messages"][1]["citations"]} == {DOC_ID}
    # and Bo neither lists nor reaches it
    assert json.loads(chat.request("GET", "/conversations", claims=bo).body) == {
        "conversations": []
    }
    assert chat.request("GET", "/conversations/c-1", claims=bo).status == 404
    # and without the authorizer's claims nobody is named
    assert chat.request("GET", "/conversations").status == 401


def test_chat_serves_mcp_to_a_signed_in_user_through_the_adapter(chat: WebAdapter) -> None:
    # MCP's streamable HTTP transport, as a client posts it to the stack's /mcp
    accept = {"Accept": "application/json, text/event-stream"}
    user = {"sub": "sub-ana", "token_use": "id"}
    start = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    search = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "circumvention"}},
    }

    assert chat.request("POST", "/mcp", start, claims=user, headers=accept).status == 200
    found = chat.request("POST", "/mcp", search, claims=user, headers=accept)

    assert found.status == 200, found.body
    result = json.loads(found.body)["result"]
    assert not result.get("isError"), result
    assert result["structuredContent"]["passages"][0]["doc_id"] == DOC_ID
    # and nobody unnamed
    assert chat.request("POST", "/mcp", search, headers=accept).status == 401


def test_chat_without_opt_python_on_pythonpath_never_gets_ready(
    layout: Layout, stack: Stack, tmp_path: Path
) -> None:
    # Given the built chat function whose run.sh starts uvicorn without /opt/python on
    # PYTHONPATH (issue 11, defect 1)
    env = chat_environment(layout, stack)
    task_root = tmp_path / "task"
    shutil.copytree(Path(env["LAMBDA_TASK_ROOT"]), task_root, symlinks=True)
    script = task_root / env["_HANDLER"]
    old, count = re.subn(r"PYTHONPATH=\S+ exec ", "exec ", script.read_text())
    assert count == 1, "run.sh no longer sets PYTHONPATH on its exec line: update this test"
    script.write_text(old)
    env["LAMBDA_TASK_ROOT"] = str(task_root)
    adapter = WebAdapter(layout, env, tmp_path / "chat.log")

    # When the adapter starts it, Then it never becomes ready, and says why, within the wait
    adapter.start()
    try:
        with pytest.raises(NotReady, match="No module named 'docchat'"):
            adapter.wait_ready(READY_WITHIN_S)
    finally:
        adapter.stop()


def test_chat_runs_run_sh_with_lambdas_environment_and_no_pythonpath(
    layout: Layout, stack: Stack
) -> None:
    env = chat_environment(layout, stack)

    assert "PYTHONPATH" not in env
    assert env["_HANDLER"] == "run.sh"
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert env["AWS_LWA_READINESS_CHECK_PATH"] == "/ready"
    assert env["LAMBDA_TASK_ROOT"] == str(layout.task_root("chat"))
