"""A client that stops reading an answer (the page's Stop, a closed tab) stops the model: the
server closes the agent's generator and with it the model's stream, over a real uvicorn."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from docchat.answer.backend import ChatBackend
from docchat.llm import Message, ModelEvent, TextDelta, ToolSpec, TurnEnd
from docchat.search.library import Library
from docchat.serve.app import create_app
from tests.chatkit import ServedApp, library, tuned_config

__all__ = ["library"]  # the fixture

PIECES = 400  # 400 x 20 ms: eight seconds of answer, unless the server stops reading
PAUSE_S = 0.02


class EndlessModel:
    """A long streamed answer that counts the pieces the agent took and notices its closing,
    as a real stream's `with` block closes the HTTP response (anthropic's MessageStream)."""

    model_id = "endless"

    def __init__(self) -> None:
        self.read = 0
        self.closed = threading.Event()
        self.finished = False

    def stream(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> Iterator[ModelEvent]:
        try:
            for n in range(PIECES):
                time.sleep(PAUSE_S)
                self.read += 1
                yield TextDelta(f"word{n} ")
            yield TurnEnd("end_turn", 10, PIECES)
            self.finished = True
        finally:
            self.closed.set()


@pytest.fixture
def served(library: Library) -> Iterator[tuple[str, EndlessModel]]:
    model = EndlessModel()
    backend = ChatBackend(library=library, model=model, config=tuned_config())
    app = ServedApp(create_app(lambda: backend))
    app.start()
    try:
        yield f"http://127.0.0.1:{app.port}", model
    finally:
        app.stop()


def _read_deltas_then_leave(url: str, path: str, body: dict[str, Any], deltas: int) -> None:
    """Stream `path` until `deltas` text pieces came, then close the connection mid-answer."""
    seen = 0
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", f"{url}{path}", json=body) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event: delta") or '"content"' in line:
                seen += 1
            if seen >= deltas:
                return


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/chat", {"messages": [{"role": "user", "content": "Tell me everything"}]}),
        (
            "/v1/chat/completions",
            {
                "model": "docchat",
                "stream": True,
                "messages": [{"role": "user", "content": "Tell me everything"}],
            },
        ),
    ],
    ids=["chat", "completions"],
)
def test_stop_closes_the_model_stream_and_stops_reading_it(
    served: tuple[str, EndlessModel], path: str, body: dict[str, Any]
) -> None:
    url, model = served
    # Given an answer streaming, when the client leaves after three pieces
    _read_deltas_then_leave(url, path, body, deltas=3)
    left = time.monotonic()

    # Then the server closes the model's stream within a piece or two
    assert model.closed.wait(timeout=3), f"the model stream is still open ({model.read} read)"
    closed_after = time.monotonic() - left
    read_at_close = model.read
    # And reads nothing more from it: no piece after the close, far fewer than the answer had
    time.sleep(10 * PAUSE_S)
    assert model.read == read_at_close
    assert not model.finished
    assert model.read < 40, model.read
    assert closed_after < 1.5, closed_after
