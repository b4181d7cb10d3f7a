"""Body limits hold while a body streams in, not only when it declares a Content-Length.

The server runs as its own process (`uvicorn --factory docchat.wiring.local:local_app`), so its peak
memory (VmHWM) can be read from /proc while a client sends a chunked body over a real socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from docchat.serve.app import MAX_BODY_BYTES

MiB = 1024 * 1024
SENT_MIB = 200
PIECE = b"x" * MiB


@dataclass
class Served:
    pid: int
    port: int


def _peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if not Path("/proc/self/status").exists():
        pytest.skip("reads peak memory from /proc (Linux)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHAT_")}
    env["DOCCHAT_DATA_DIR"] = str(tmp_path_factory.mktemp("limits"))
    command = [sys.executable, "-m", "uvicorn", "--factory", "docchat.wiring.local:local_app"]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"], env=env
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, "uvicorn exited"
                assert time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.1)
        yield Served(process.pid, port)
    finally:
        process.terminate()
        process.wait(timeout=20)


@dataclass
class Exchange:
    """One chunked request: how much of its body went out, and what came back when."""

    sent: int = 0
    answer: bytes = b""
    answered_after: int | None = None  # bytes sent when the first answer bytes arrived
    lock: threading.Lock = field(default_factory=threading.Lock)


def _send_chunked(port: int, path: str, content_type: str, total: int) -> Exchange:
    """POST `total` bytes as HTTP/1.1 chunks (no Content-Length), reading the answer meanwhile;
    sending stops when the server answers or closes the connection."""
    exchange = Exchange()
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)

    def read() -> None:
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            with exchange.lock:
                if exchange.answered_after is None:
                    exchange.answered_after = exchange.sent
                exchange.answer += data

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    try:
        conn.sendall(head.encode())
        while exchange.sent < total and exchange.answered_after is None:
            conn.sendall(b"%x\r\n" % len(PIECE) + PIECE + b"\r\n")
            with exchange.lock:
                exchange.sent += len(PIECE)
        conn.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server closed the connection: its answer is what counts
    deadline = time.monotonic() + 30
    while reader.is_alive() and not _complete(exchange.answer):
        assert time.monotonic() < deadline, f"no whole answer: {exchange.answer[:200]!r}"
        time.sleep(0.02)
    with contextlib.suppress(OSError):  # the server may have closed it already
        conn.shutdown(socket.SHUT_RDWR)  # wakes the reader (close alone would not)
    reader.join(timeout=10)
    conn.close()
    return exchange


def _complete(answer: bytes) -> bool:
    head, blank, body = answer.partition(b"\r\n\r\n")
    for line in head.lower().split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return bool(blank) and len(body) >= int(line.split(b":")[1])
    return False


def _status_and_body(answer: bytes) -> tuple[int, dict[str, Any]]:
    """The answer's status and JSON body, after checking that the body's request id is the
    X-Request-Id header's."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    parsed = json.loads(body)
    headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
    assert parsed["error"].pop("request_id") == headers[b"x-request-id"].decode()
    return status, parsed


def test_a_chunked_chat_body_is_refused_early_with_bounded_memory(served: Served) -> None:
    before = _peak_rss_mib(served.pid)

    exchange = _send_chunked(served.port, "/chat", "application/json", SENT_MIB * MiB)

    growth = _peak_rss_mib(served.pid) - before
    status, body = _status_and_body(exchange.answer)
    print(f"/chat: answered after {exchange.answered_after} bytes, peak RSS +{growth:.1f} MiB")
    assert status == 413
    assert body == {
        "error": {
            "status": 413,
            "message": f"the request body is larger than {MAX_BODY_BYTES} bytes",
        }
    }
    # It stopped reading at the limit (512 KiB), long before the 200 MiB were out...
    assert exchange.answered_after is not None and exchange.answered_after < 20 * MiB
    # ...and never held more than a sliver of the body (before: +900 MB for 400 MB sent).
    assert growth < 30, f"the server grew by {growth:.0f} MiB"


def test_a_chunked_upload_past_its_limit_is_refused_early(served: Served) -> None:
    before = _peak_rss_mib(served.pid)

    exchange = _send_chunked(
        served.port, "/documents?filename=big.pdf", "application/pdf", 160 * MiB
    )

    growth = _peak_rss_mib(served.pid) - before
    status, body = _status_and_body(exchange.answer)
    print(f"upload: answered after {exchange.answered_after} bytes, peak RSS +{growth:.1f} MiB")
    assert status == 413
    assert body["error"] == {
        "status": 413,
        "message": "the file is larger than the 100 MB an upload may have: split the document",
    }
    assert exchange.answered_after is not None and exchange.answered_after < 120 * MiB
    assert growth < 160, f"the server grew by {growth:.0f} MiB"
