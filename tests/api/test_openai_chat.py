"""A local model through an OpenAI-compatible server, end to end: a loopback HTTP server replays
recorded Chat Completions streams (tests/fixtures/openai/README.md cites their shapes), the
adapter is built by the wiring from DOCCHAT_ settings, and `docchat serve`'s app streams the
same chat events as with Claude's recordings of the same conversation."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai

from docchat.answer.agent import Agent
from docchat.answer.backend import ChatBackend
from docchat.answer.events import event_data
from docchat.config import Settings
from docchat.ports import ChatModel
from docchat.search.library import Library
from docchat.wiring import chat_model
from tests.api.test_claude_chat import Recorded as RecordedClaude
from tests.api.test_claude_chat import _claude, manual
from tests.api.test_server import Server
from tests.chatkit import tuned_config
from tests.conftest import REPO

__all__ = ["manual"]  # the fixture

FIXTURES = REPO / "tests" / "fixtures" / "openai"
QUESTION = {"messages": [{"role": "user", "content": "How tight are the head bolts?"}]}


class ReplayServer:
    """A stand-in OpenAI-compatible server on 127.0.0.1: each POST gets the next recorded
    body, written line by line as a server streams it; the request bodies are kept."""

    def __init__(self, *fixtures: str, status: int = 200) -> None:
        self.fixtures = list(fixtures)
        self.status = status
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                replay.requests.append(json.loads(self.rfile.read(length)))
                replay.headers.append(dict(self.headers))
                name = replay.fixtures.pop(0)
                streamed = name.endswith(".sse")
                self.send_response(replay.status)
                self.send_header(
                    "Content-Type", "text/event-stream" if streamed else "application/json"
                )
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                for line in (FIXTURES / name).read_bytes().splitlines(keepends=True):
                    self.wfile.write(line)
                    self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()


def _local_model(base_url: str, api_key: str = "") -> ChatModel:
    """The model `docchat serve` builds from these settings."""
    environ = {
        "DOCCHAT_MODEL_PROVIDER": "openai",
        "DOCCHAT_OPENAI_BASE_URL": base_url,
        "DOCCHAT_MODEL_ID": "qwen3:8b",
        "DOCCHAT_OPENAI_API_KEY": api_key,
    }
    model = chat_model(Settings.from_env(environ))
    assert model is not None
    return model


def _sse(library: Library, model: ChatModel) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs /chat streams for QUESTION."""
    backend = ChatBackend(library=library, model=model, config=tuned_config(top_k=2))
    received: list[tuple[str, dict[str, Any]]] = []
    with (
        Server(backend) as server,
        httpx.Client(timeout=30) as client,
        client.stream("POST", f"{server.url}/chat", json=QUESTION) as response,
    ):
        assert response.status_code == 200
        kind = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line[len("event: ") :]
            elif line.startswith("data: "):
                received.append((kind, json.loads(line[len("data: ") :])))
    return received


def _squeezed(kinds: Iterator[str]) -> list[str]:
    """Event kinds with runs of `delta` counted once (the providers split text differently)."""
    out: list[str] = []
    for kind in kinds:
        if not (kind == "delta" and out and out[-1] == "delta"):
            out.append(kind)
    return out


def test_local_model_streams_the_same_chat_events_as_claude(manual: Library) -> None:
    # Given the same conversation recorded from Claude and from an OpenAI-compatible server
    claude = _sse(manual, _claude(RecordedClaude("tool_use_turn.sse", "text_turn.sse")))
    with ReplayServer("tool_call_split.sse", "answer_turn.sse") as server:
        # When /chat answers it with the local model
        local = _sse(manual, _local_model(server.base_url))

    # Then the same events arrive, with the same tool call, answer, sources and citations
    assert _squeezed(k for k, _ in local) == _squeezed(k for k, _ in claude)
    assert _squeezed(k for k, _ in local) == [
        "status",
        "delta",
        "tool_call",
        "sources",
        "delta",
        "citations",
        "done",
    ]

    def pick(events: list[tuple[str, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
        return [data for k, data in events if k == kind]

    assert pick(local, "tool_call")[0]["input"] == {
        "query": "torque for the M8 cylinder head bolts"
    }
    text = "".join(d["text"] for d in pick(local, "delta"))
    assert text == "".join(d["text"] for d in pick(claude, "delta"))
    assert pick(local, "sources") == pick(claude, "sources")
    assert pick(local, "citations") == pick(claude, "citations")
    assert {c["number"] for c in pick(local, "citations")[0]["citations"]} == {1, 2}
    assert pick(local, "done")[0]["usage"] == {
        "input_tokens": 412 + 903,
        "output_tokens": 27 + 31,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "rerank_search_units": 0,
        "cost_usd": None,  # no list price names qwen3:8b
    }
    # The second request carried the tool's numbered passages back as a role: tool message
    second = server.requests[1]["messages"]
    assert second[-2]["role"] == "assistant"
    assert second[-2]["tool_calls"][0]["id"] == "call_q8Ln2vXo"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_q8Ln2vXo"
    assert "[1] Engine manual, p. 41" in second[-1]["content"]
    assert server.requests[0]["stream"] is True and server.requests[0]["model"] == "qwen3:8b"
    assert "authorization" not in {h.lower() for h in server.headers[0]}


def test_local_model_answers_openai_clients_with_citations(manual: Library) -> None:
    with ReplayServer("ollama_tool_call.sse", "answer_turn.sse") as upstream:
        backend = ChatBackend(
            library=manual, model=_local_model(upstream.base_url), config=tuned_config(top_k=2)
        )
        with Server(backend) as server:
            client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
            chunks = list(
                client.chat.completions.create(
                    model="docchat",
                    stream=True,
                    messages=[{"role": "user", "content": "How tight are the head bolts?"}],
                )
            )

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "to 25 N·m in three passes [1]." in text
    citations = (chunks[-1].model_extra or {})["citations"]
    assert [c["page"] for c in citations] == [41, 42]


def test_local_model_corrects_a_call_whose_arguments_are_not_json(manual: Library) -> None:
    with ReplayServer("invalid_arguments.sse", "tool_call_split.sse", "answer_turn.sse") as server:
        events = _sse(manual, _local_model(server.base_url, api_key="sk-local"))

    # The broken call went back to the model as a tool error naming the missing field ...
    result = server.requests[1]["messages"][-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_bad1"
    assert result["content"].startswith("Error: Invalid input for search_documents: query")
    # ... which called again and answered, cited
    assert [k for k, _ in events].count("tool_call") == 2
    assert events[-1][0] == "done" and events[-2][0] == "citations"
    assert server.headers[0]["Authorization"] == "Bearer sk-local"


def test_unreachable_local_model_ends_the_stream_with_a_useful_error(manual: Library) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    events = _sse(manual, _local_model(f"http://127.0.0.1:{port}/v1"))

    assert [k for k, _ in events] == ["status", "error"]
    error = events[-1][1]
    assert error["code"] == "model_unavailable"
    assert f"127.0.0.1:{port}/v1" in error["message"] and "is it running" in error["message"]


def test_local_model_refusing_the_key_is_an_access_error(manual: Library) -> None:
    with ReplayServer("unauthorized.json", status=401) as server:
        agent = Agent(manual, _local_model(server.base_url, api_key="wrong"), tuned_config())
        events = list(agent.run(QUESTION["messages"]))

    error = event_data(events[-1])
    assert events[-1].type == "error" and error["code"] == "model_access"
    assert "Invalid API Key" in error["message"] and "DOCCHAT_OPENAI_API_KEY" in error["message"]
