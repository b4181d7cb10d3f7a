"""A question lost to a crash: a server killed (SIGKILL) mid-answer leaves the conversation
with its question and the answer as far as it had been saved, marked stopped, in the local
SQLite store and in DynamoDB alike. Before, it kept only the title."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from docchat.adapters.dynamodb_conversations import DynamoConversations
from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.answer.conversations import LOCAL_USER, SAVE_EVERY_S
from docchat.ports import ConversationStore
from tests.api.crash_app import PAUSE_S
from tests.conftest import REPO, table_schema

pytestmark = pytest.mark.slow  # a uvicorn process per store

QUESTION = "When did the new bridge open?"
REGION = "eu-west-1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def moto_endpoint(dummy_aws: None) -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """The crash app under its own uvicorn, once it answers."""
    port = _free_port()
    command = [sys.executable, "-m", "uvicorn", "--factory", "tests.api.crash_app:app"]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        cwd=REPO,
        env={**os.environ, **env, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/ready", timeout=1)
            return process, url
        except httpx.TransportError:
            assert process.poll() is None, "uvicorn exited"
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.1)


def _killed_mid_answer(process: subprocess.Popen[bytes], url: str) -> str:
    """Ask in conversation c-1, SIGKILL the server once the answer has streamed for a while,
    and return the text that had arrived."""
    body = {"messages": [{"role": "user", "content": QUESTION}], "conversation_id": "c-1"}
    received: list[str] = []
    first: float | None = None
    try:
        with httpx.stream("POST", f"{url}/chat", json=body, timeout=30) as answer:
            assert answer.status_code == 200
            kind = ""
            for line in answer.iter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: ") and kind == "delta":
                    received.append(json.loads(line.removeprefix("data: "))["text"])
                    first = first or time.monotonic()
                    # Long enough for a save of the answer so far, then some more
                    if time.monotonic() - first > SAVE_EVERY_S * 2 + PAUSE_S:
                        os.kill(process.pid, signal.SIGKILL)
                        break
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=20)
    return "".join(received)


def _check_saved(store: ConversationStore, received: str) -> None:
    kept = store.conversation(LOCAL_USER, "c-1")
    assert kept is not None and kept.title == QUESTION
    question, answer = kept.messages  # the question, and the answer so far
    assert (question.role, question.content) == ("user", QUESTION)
    assert answer.role == "assistant" and answer.stopped
    assert answer.content.strip() and received.startswith(answer.content)
    assert len(answer.content) < len(received) + 1


def test_a_killed_server_leaves_the_question_and_the_stopped_answer_in_sqlite(
    tmp_path: Path,
) -> None:
    conversations = tmp_path / "conversations.sqlite3"
    env = {"CRASH_STORE": f"sqlite:{conversations}", "CRASH_INDEX": str(tmp_path / "i.sqlite3")}
    process, url = _serve(env)

    received = _killed_mid_answer(process, url)

    store = SqliteConversations(conversations)
    try:
        _check_saved(store, received)
    finally:
        store.close()


def test_a_killed_server_leaves_the_question_and_the_stopped_answer_in_dynamodb(
    tmp_path: Path, moto_endpoint: str
) -> None:
    dynamodb = boto3.resource("dynamodb", endpoint_url=moto_endpoint, region_name=REGION)
    table = dynamodb.create_table(TableName="conversations", **table_schema("ConversationsTable"))
    env: dict[str, Any] = {
        "CRASH_STORE": "dynamodb:conversations",
        "CRASH_INDEX": str(tmp_path / "i.sqlite3"),
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_DEFAULT_REGION": REGION,
    }
    process, url = _serve(env)

    received = _killed_mid_answer(process, url)

    _check_saved(DynamoConversations(table), received)
