"""`docchat serve` as a user starts it: a real process, a real port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from docchat.cli import main

DOCCHAT = Path(sys.executable).parent / "docchat"
TOKEN = "serve-test-token-7f3a"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("DOCCHAT_")}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])
def test_serve_beyond_loopback_without_a_token_refuses_to_start(tmp_path: Path, host: str) -> None:
    # Today it serves every document to the network; it must stop at once instead
    try:
        done = subprocess.run(
            [str(DOCCHAT), "serve", "--host", host, "--port", str(_free_port())],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**_env(), "DOCCHAT_DATA_DIR": str(tmp_path / "d")},
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"docchat serve --host {host} started without a token: {exc.stderr!r}")

    said = " ".join(done.stderr.split())
    assert done.returncode == 2
    assert f"--host {host} lets other machines reach docchat" in said
    assert "--token or DOCCHAT_API_TOKEN" in said
    assert "serving" not in said


def test_serve_on_a_port_in_use_says_so_without_claiming_to_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        code = main(["serve", "--port", str(port), "--data-dir", str(tmp_path / "d")])

    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert f"cannot serve on 127.0.0.1:{port}" in err
    assert "another server" in err and "--port" in err
    assert "serving" not in err


@pytest.fixture
def served_with_token(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [str(DOCCHAT), "serve", "--port", str(port), "--data-dir", str(tmp_path / "d")],
        stderr=subprocess.PIPE,
        text=True,
        env={**_env(), "DOCCHAT_API_TOKEN": TOKEN},
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # printed once the port is bound
        assert f"on http://127.0.0.1:{port}" in line, line
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "docchat serve did not answer"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_serve_with_a_token_asks_every_api_call_for_it(served_with_token: str) -> None:
    url = served_with_token

    bare = httpx.get(f"{url}/documents")
    given = httpx.get(f"{url}/documents", headers={"authorization": f"Bearer {TOKEN}"})
    listed = openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0).models.list()

    assert bare.status_code == 401
    assert given.status_code == 200 and given.json() == {"documents": []}
    assert [m.id for m in listed] == ["docchat"]


def test_serve_on_another_loopback_address_answers_its_own_url(tmp_path: Path) -> None:
    # Given docchat serve on 127.0.0.2, a loopback address other than 127.0.0.1
    port = _free_port()
    process = subprocess.Popen(
        [str(DOCCHAT), "serve", "--host", "127.0.0.2", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env={**_env(), "DOCCHAT_DATA_DIR": str(tmp_path / "d")},
    )
    try:
        assert process.stderr is not None
        said = process.stderr.readline()
        url = said.split(" on ", 1)[1].split()[0]
        assert url == f"http://127.0.0.2:{port}", said
        deadline = time.monotonic() + 30
        while True:
            try:
                # When its own printed URL is asked (before: 403, a foreign host name)
                page, documents = httpx.get(url, timeout=5), httpx.get(f"{url}/documents")
                foreign = httpx.get(url, headers={"host": "rebound.example"})
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "docchat serve did not answer"
                time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=20)

    # Then it answers, and another name for the same address is still refused
    assert (page.status_code, documents.status_code) == (200, 200)
    assert foreign.status_code == 403
