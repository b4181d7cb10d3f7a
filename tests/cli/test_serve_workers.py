"""`docchat serve --workers 2`: two processes answer on one port, each sees what the other
wrote, and one that dies is replaced. Which worker takes a connection is the kernel's choice, so
the test stops one (SIGSTOP) to make the other take it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from docchat.cli import main
from tests.cli.sandbox import DOCCHAT, env, free_port

NOTES = (
    b"# Lighthouse keeping\n\n"
    b"The keeper of the Skerryvore lighthouse changes the lamp's wick every Tuesday at dawn.\n\n"
    b"The codeword for the storm log is marigold-seventeen.\n"
)


def _workers(server: int) -> list[int]:
    """The server's worker processes (spawned by multiprocessing), not its resource tracker."""
    found = []
    for task in Path(f"/proc/{server}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(int(child))
    return sorted(found)


def _until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@contextmanager
def _stopped(pid: int) -> Iterator[None]:
    """Worker `pid` stopped (SIGSTOP) for the block, so that the other takes the connections. One
    stopped past uvicorn's health check (5 s; an answer can take that long on a busy machine) is
    killed and replaced by the server, as a hung worker is: then there is nothing to continue."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _client(port: int) -> httpx.Client:
    # A connection per phase: a kept-alive one would stay with the worker that accepted it.
    return httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)


def _answer(port: int, question: str) -> str:
    with _client(port) as http:
        response = http.post("/chat", json={"messages": [{"role": "user", "content": question}]})
    assert response.status_code == 200, response.text
    assert "event: done" in response.text, response.text[-500:]
    return response.text


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    data = str(tmp_path / "data")
    process = subprocess.Popen(
        [str(DOCCHAT), "serve", "--workers", "2", "--data-dir", data, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env(),
    )
    try:
        _until(lambda: len(_workers(process.pid)) == 2, "two workers did not start", 120)

        def ready() -> bool:
            assert process.poll() is None, process.communicate()
            try:
                with _client(port) as http:
                    return http.get("/ready").status_code == 200
            except httpx.TransportError:
                return False

        _until(ready, "docchat serve --workers 2 did not answer", 120)
        yield process, port
    finally:
        if process.poll() is None:
            process.terminate()
            _, err = process.communicate(timeout=60)
            assert process.returncode == 0, err.decode(errors="replace")


@pytest.mark.slow
def test_each_worker_answers_with_what_the_other_indexed(
    served: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = served
    first, second = _workers(process.pid)

    # Given a document uploaded to the second worker (the first one stopped), and indexed there
    with _stopped(first), _client(port) as http:
        response = http.post(
            "/documents",
            params={"filename": "lighthouse notes.md"},
            content=NOTES,
            headers={"content-type": "text/markdown"},
        )
        assert response.status_code == 202, response.text
        doc_id = response.json()["doc_id"]

        def indexed() -> bool:
            record = http.get(f"/documents/{doc_id}").json()
            assert record["status"] != "FAILED", record
            return bool(record["status"] == "INDEXED")

        _until(indexed, "the upload was not indexed", 120)

    # When the first worker alone is asked about it (the second one stopped)
    with _stopped(second):
        text = _answer(port, "What is the codeword for the storm log?")

    # Then it answers from the document the other worker indexed, with its quote
    assert doc_id in text
    assert "marigold-seventeen" in text


@pytest.mark.slow
def test_a_worker_that_dies_is_replaced_and_the_server_still_answers(
    served: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = served
    first, second = _workers(process.pid)

    # Given a worker killed (SIGKILL)
    os.kill(first, signal.SIGKILL)

    # Then the server starts another in its place and both answer
    _until(
        lambda: len(workers := _workers(process.pid)) == 2 and first not in workers,
        "the killed worker was not replaced",
        120,
    )
    (replacement,) = set(_workers(process.pid)) - {second}
    with _stopped(second):
        assert "event: done" in _answer(port, "What does the keeper change?")
    with _stopped(replacement):
        assert "event: done" in _answer(port, "What does the keeper change?")


@pytest.mark.slow
def test_workers_of_a_killed_server_stop_and_free_the_port(
    served: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = served
    workers = _workers(process.pid)

    # Given the server's supervisor killed with SIGKILL (it cannot stop its workers itself)
    process.kill()
    process.wait(timeout=30)

    # Then its workers end by themselves, and the port can be served again
    _until(
        lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers),
        "the workers of a killed server go on running",
        30,
    )
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))


@pytest.mark.parametrize("workers", ["0", "many", "65"])
def test_a_worker_count_that_is_not_one_to_64_is_refused(
    workers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--workers", workers, "--port", str(free_port())])
    assert exited.value.code == 2
    assert f"{workers!r} is not a number of processes from 1 to 64" in capsys.readouterr().err
