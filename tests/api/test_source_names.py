"""Documents are shown by name: the server's paths never cross the API (issue 12, item 8)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from docchat.models import source_name
from tests.api.guarded import PDF, GuardedServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GuardedServer]:
    with GuardedServer(tmp_path / "data") as running:
        yield running


def test_no_answer_of_the_api_holds_a_server_path(server: GuardedServer, tmp_path: Path) -> None:
    pdf = {"content-type": "application/pdf"}
    posted = httpx.post(
        f"{server.url}/documents", params={"filename": "ferry.pdf"}, content=PDF, headers=pdf
    )
    doc_id = posted.json()["doc_id"]
    record = server.wait(doc_id)
    assert Path(record.source).is_absolute()  # the server keeps its path...
    question = {"messages": [{"role": "user", "content": "When does the ferry leave?"}]}

    listed = httpx.get(f"{server.url}/documents")
    one = httpx.get(f"{server.url}/documents/{doc_id}")
    chat = httpx.post(f"{server.url}/chat", json=question, timeout=30)
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
    completion = client.chat.completions.create(
        model="docchat", messages=[{"role": "user", "content": "When does the ferry leave?"}]
    )

    # ...and shows the name
    assert posted.json()["source"] == "ferry.pdf"
    assert listed.json()["documents"][0]["source"] == "ferry.pdf"
    assert one.json()["source"] == "ferry.pdf"
    events = [json.loads(line[6:]) for line in chat.text.splitlines() if line.startswith("data: ")]
    passages = [p for e in events if "passages" in e for p in e["passages"]]
    citations = [c for e in events if "citations" in e for c in e["citations"]]
    assert passages and citations
    assert {p["source"] for p in passages} == {c["source"] for c in citations} == {"ferry.pdf"}
    assert (completion.model_extra or {})["citations"][0]["source"] == "ferry.pdf"
    for answer in (posted.text, listed.text, one.text, chat.text, completion.model_dump_json()):
        assert str(tmp_path) not in answer
        assert str(server.settings.data_dir) not in answer


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("/home/ana/contracts/契約書.pdf", "契約書.pdf"),
        ("/srv/docchat/.docchat/uploads/Q3 report.pdf", "Q3 report.pdf"),
        ("C:\\Users\\ana\\Documents\\plan.pdf", "plan.pdf"),
        ("\\\\fileserver\\share\\plan.pdf", "plan.pdf"),
        ("docchat-documents-123/uploads/Q3-report.pdf", "uploads/Q3-report.pdf"),
        ("docchat-documents-123/report.pdf", "report.pdf"),
        ("bridges.pdf", "bridges.pdf"),
    ],
)
def test_source_name_shows_a_files_name_or_an_objects_key(source: str, shown: str) -> None:
    assert source_name(source) == shown
