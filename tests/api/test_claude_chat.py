"""The agent and the API with the real anthropic SDK parsing recorded streaming responses:
a tool_use turn, then a text turn with citation markers; and a model error mid-stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import httpx2
import pytest

from docchat.adapters.anthropic_model import ClaudeModel
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.agent import Agent
from docchat.answer.backend import ChatBackend
from docchat.answer.events import event_data
from docchat.models import Chunk, DocStatus, DocumentRecord
from docchat.search.library import Library
from tests.api.test_server import Server
from tests.chatkit import SEARCH, tuned_config
from tests.conftest import REPO, WordEmbedder

FIXTURES = REPO / "tests" / "fixtures" / "anthropic"
MANUAL = [
    "Tighten the M8 cylinder head bolts to 25 N·m in three passes, torque for the M8 bolts.",
    "Work from the centre outwards and always replace the cylinder head gasket.",
]


class Recorded:
    """An HTTP transport that answers each Messages request with the next recorded stream."""

    def __init__(self, *fixtures: str) -> None:
        self.fixtures = list(fixtures)
        self.bodies: list[dict[str, object]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        stream = (FIXTURES / self.fixtures.pop(0)).read_bytes()
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=stream)


def _claude(transport: Recorded) -> ClaudeModel:
    client = anthropic.Anthropic(
        api_key="test",
        base_url="http://testserver",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(transport)),
    )
    return ClaudeModel(client=client, model_id="claude-sonnet-4-6")


@pytest.fixture
def manual(tmp_path: Path) -> Library:
    embedder = WordEmbedder()
    index = SqliteIndex(tmp_path / "i.sqlite3", embedding_model=embedder.model_id, dimension=64)
    for page, text in enumerate(MANUAL, start=1):
        doc_id = f"manual-p{page}"
        chunk = Chunk(
            chunk_id=f"{doc_id}:0",
            doc_id=doc_id,
            version="v",
            source="manual.pdf",
            title="Engine manual",
            headings=["Cylinder head"],
            page_start=page + 40,
            page_end=page + 40,
            text=text,
        )
        record = DocumentRecord(
            doc_id=doc_id,
            source="manual.pdf",
            title="Engine manual",
            version="v",
            pages=1,
            status=DocStatus.INDEXED,
        )
        index.replace_document(record, [chunk], embedder.embed_documents([text]))
    return Library(index=index, embedder=embedder, registry=index, **SEARCH)


def test_claude_tool_turn_then_cited_answer(manual: Library) -> None:
    transport = Recorded("tool_use_turn.sse", "text_turn.sse")
    agent = Agent(manual, _claude(transport), tuned_config(top_k=2))

    events = list(agent.run([{"role": "user", "content": "How tight are the head bolts?"}]))

    kinds = [e.type for e in events]
    assert kinds[0] == "status" and kinds[-2:] == ["citations", "done"]
    call = next(e for e in events if e.type == "tool_call")
    assert event_data(call)["input"] == {"query": "torque for the M8 cylinder head bolts"}
    text = "".join(event_data(e)["text"] for e in events if e.type == "delta")
    assert "to 25 N·m in three passes [1]." in text
    citations = event_data(next(e for e in events if e.type == "citations"))["citations"]
    sources = event_data(next(e for e in events if e.type == "sources"))["passages"]
    by_number = {s["number"]: s for s in sources}
    assert {c["number"] for c in citations} == {1, 2}
    for citation in citations:  # each quote is text of the passage it cites, on its page
        passage = by_number[citation["number"]]
        assert citation["quote"] in passage["text"]
        assert citation["page"] == passage["page_start"]
    # The second request carried the tool result with the numbered passages.
    second = transport.bodies[1]
    messages = second["messages"]
    assert isinstance(messages, list)
    result = messages[-1]["content"][0]
    assert result["type"] == "tool_result" and "[1] Engine manual, p. 41" in result["content"]
    assert event_data(events[-1])["usage"]["output_tokens"] > 0


def test_model_error_mid_stream_ends_the_sse_stream_cleanly(manual: Library) -> None:
    backend = ChatBackend(
        library=manual, model=_claude(Recorded("overloaded_mid_stream.sse")), config=tuned_config()
    )
    with (
        Server(backend) as server,
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST",
            f"{server.url}/chat",
            json={"messages": [{"role": "user", "content": "head bolts?"}]},
        ) as response,
    ):
        lines: Iterator[str] = response.iter_lines()
        events = [line for line in lines if line.startswith("event: ")]
        assert response.status_code == 200

    assert events[0] == "event: status" and events[-1] == "event: error"
    assert "event: delta" in events and "event: done" not in events
