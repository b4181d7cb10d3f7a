"""Stalled requests do not hold connections: a head or a body that stops, or trickles, is cut off
with a 408 and the connection closed, by raw sockets against a real uvicorn on 127.0.0.1 with
docchat's protocol (docchat.serve.protocol). Its deadlines are shortened here; the last tests
run `docchat serve` and the chat function's run.sh as they start, with the real deadlines."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from docchat.answer.agent import Agent
from docchat.answer.backend import ChatBackend
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.search.library import Library
from docchat.serve.app import create_app
from docchat.serve.protocol import BODY_TIMEOUT_S, DeadlineH11Protocol
from tests.chatkit import ScriptedModel, library, tuned_config
from tests.conftest import CHAT_FUNCTION_SETTINGS, REPO

__all__ = ["library"]  # the fixture
pytestmark = pytest.mark.slow  # a uvicorn per test, and deadlines to wait out

HEAD_S = BODY_S = 1.0
MARGIN_S = 3.0  # a loaded machine's lateness
CHAT_HEAD = (
    b"POST /chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n"
)
QUESTION = json.dumps({"messages": [{"role": "user", "content": "When did the bridge open?"}]})


class QuickDeadlines(DeadlineH11Protocol):
    head_timeout_s = HEAD_S
    body_timeout_s = BODY_S
    body_min_rate = 1000


class SlowAnswers(ChatBackend):
    """Answers that take longer than every deadline here, once the request is read."""

    def agent(self) -> Agent:
        search = ToolUse(id="t1", name="search_documents", input={"query": "bridge"})
        words = [TextDelta(f"word{n} ") for n in range(8)]
        model = ScriptedModel(
            [[search, TurnEnd("tool_use", 1, 1)], [*words, TurnEnd("end_turn", 1, 8)]], pause=0.4
        )
        return Agent(self.library, model, self.config)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def port(library: Library) -> Iterator[int]:
    backend = SlowAnswers(library=library, model=None, config=tuned_config())
    chosen = _free_port()
    config = uvicorn.Config(
        create_app(lambda: backend),
        host="127.0.0.1",
        port=chosen,
        log_level="warning",
        lifespan="off",
        http=QuickDeadlines,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield chosen
    server.should_exit = True
    thread.join(timeout=10)


def _exchange(port: int, pieces: list[bytes], *, every_s: float = 0.0) -> tuple[float, bytes]:
    """Send `pieces` `every_s` apart, then read until the server closes; the seconds from
    connecting to the close, and what came back."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        for piece in pieces:
            # Stop once it answered: writing on would have its close reset the connection
            if select.select([conn], [], [], 0)[0]:
                break
            conn.sendall(piece)
            time.sleep(every_s)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return time.monotonic() - started, answer


def _timed_out(answer: bytes, part: str) -> None:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 "), answer[:200]
    error = json.loads(body)["error"]
    assert error["status"] == 408 and f"request's {part} came too slowly" in error["message"]


def test_a_connection_that_sends_nothing_is_closed(port: int) -> None:
    took, answer = _exchange(port, [])

    _timed_out(answer, "head")
    assert HEAD_S <= took < HEAD_S + MARGIN_S


def test_a_head_trickled_byte_by_byte_is_closed_at_its_deadline(port: int) -> None:
    head = b"GET /documents HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100

    took, answer = _exchange(port, [bytes([b]) for b in head], every_s=0.1)

    _timed_out(answer, "head")  # each byte did not buy more time
    assert took < HEAD_S + MARGIN_S


def test_a_client_still_sending_after_the_408_is_not_reset(port: int) -> None:
    # Given a client that answered 408 for a stalled head
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(b"GET /documents HTTP/1.1\r\n")
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
        _timed_out(answer, "head")

        # When it sends on, as a trickling client's next bytes are already on their way
        conn.sendall(b"X-Late: a\r\n")
        time.sleep(0.3)
        # Then the server still drains them for a moment (a lingering close) instead of
        # answering with a reset: a reset that arrives before the client read the 408 drops it
        conn.sendall(b"X-Later: b\r\n")


def test_a_half_sent_body_is_closed_within_the_bound(port: int) -> None:
    body = QUESTION.encode()

    took, answer = _exchange(port, [CHAT_HEAD % len(body) + body[: len(body) // 2]])

    _timed_out(answer, "body")
    assert BODY_S <= took < BODY_S + MARGIN_S


def test_a_trickled_body_is_closed(port: int) -> None:
    body = QUESTION.encode()

    pieces = [CHAT_HEAD % len(body), *(bytes([b]) for b in body)]

    took, answer = _exchange(port, pieces, every_s=0.2)

    _timed_out(answer, "body")
    assert took < BODY_S + MARGIN_S + 1  # a byte per 0.2 s buys 1/1000 s per byte


def test_a_body_that_keeps_coming_and_a_long_answer_are_not_cut(port: int) -> None:
    # Given a body sent over twice the body deadline, faster than the minimum rate
    body = QUESTION.encode() + b" " * 3000
    pieces = [CHAT_HEAD % len(body)] + [body[n : n + 150] for n in range(0, len(body), 150)]

    took, answer = _exchange(port, pieces, every_s=0.1)

    # Then it is read, and the answer streams for longer than any deadline to its end
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert b"event: done" in answer
    assert took > 2 * BODY_S


def _half_a_body(port: int) -> tuple[float, bytes]:
    """What a server on `port` does with half a /chat body, and how long it waits."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
    body = QUESTION.encode()
    return _exchange(port, [CHAT_HEAD % len(body) + body[:10]])


def test_docchat_serve_closes_a_connection_whose_body_stalls(tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHAT_")}
    command = [str(Path(sys.executable).parent / "docchat"), "serve", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--data-dir", str(tmp_path / "d")], env=env, stderr=subprocess.DEVNULL
    )
    try:
        took, answer = _half_a_body(port)
    finally:
        process.terminate()
        process.wait(timeout=20)

    _timed_out(answer, "body")
    assert BODY_TIMEOUT_S <= took < BODY_TIMEOUT_S + MARGIN_S * 2


def test_the_chat_functions_run_sh_closes_a_connection_whose_body_stalls(dummy_aws: None) -> None:
    # run.sh as the Web Adapter starts it (its PATH and PYTHONPATH lines included), with the
    # chat function's required settings; the adapter would forward to this port
    port = _free_port()
    env = {
        **os.environ,
        **CHAT_FUNCTION_SETTINGS,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(sys.path),
        "AWS_LWA_PORT": str(port),
        "AWS_REGION": "eu-west-1",
    }
    chat = REPO / "functions" / "chat"
    process = subprocess.Popen(
        ["bash", str(chat / "run.sh")], cwd=chat, env=env, stderr=subprocess.DEVNULL
    )
    try:
        took, answer = _half_a_body(port)
    finally:
        process.terminate()
        process.wait(timeout=20)

    _timed_out(answer, "body")
    assert BODY_TIMEOUT_S <= took < BODY_TIMEOUT_S + MARGIN_S * 2
