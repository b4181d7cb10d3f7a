"""Model-written chunk context in the cloud pipeline (ChunkContext=model): the real state machine
on moto, the real Chunk handler, and Claude on Bedrock through the real adapter and the
anthropic SDK, whose requests go (ANTHROPIC_BEDROCK_BASE_URL) to a loopback stand-in that
answers InvokeModelWithResponseStream with AWS event-stream `chunk` frames carrying Messages API
events (tests/unit/test_anthropic_model.py builds the frames and cites the formats).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from docchat.adapters.anthropic_model import claude_model
from docchat.errors import ConfigError
from docchat.ingest.artifacts import notes_key
from docchat.processes import ChunkSettings
from docchat.wiring.cloud import CloudServices
from tests.functions.conftest import ARTIFACTS_BUCKET, REGION, TABLE, Pipeline
from tests.pdfgen import make_pdf
from tests.unit.test_anthropic_model import bedrock_chunk

MODEL_ID = "global.anthropic.claude-sonnet-4-6"
HARBOUR = "The ferry leaves the north pier every hour, and the last one sails at midnight. " * 5
BRIDGE = "The bridge reopens on Monday after the repairs to its eastern span are done. " * 5
CLOSED = "The bridge stays closed for the winter while its eastern span is rebuilt. " * 5


class BedrockStandIn:
    """Claude on Bedrock's streaming endpoint on 127.0.0.1: one note per request, naming a
    word of the passage it was asked about; the request paths are kept."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.passages: list[str] = []
        self.throttle_next = 0
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if stand_in.throttle_next > 0:
                    # Bedrock's throttling: 429 with a message body
                    # (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html)
                    stand_in.throttle_next -= 1
                    refusal = json.dumps({"message": "Too many requests, please wait."}).encode()
                    self.send_response(429)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("x-amzn-ErrorType", "ThrottlingException")
                    self.send_header("Content-Length", str(len(refusal)))
                    self.end_headers()
                    self.wfile.write(refusal)
                    return
                prompt = body["messages"][-1]["content"]
                passage = prompt.split("<passage>")[1]
                stand_in.paths.append(self.path)
                stand_in.passages.append(passage)
                word = "quokka" if "ferry" in passage else "wombat"
                note = f"The harbour notice, {word} part."
                events = [
                    {"type": "message_start", "message": _message()},
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": note},
                    },
                    {"type": "content_block_stop", "index": 0},
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": 8},
                    },
                    {"type": "message_stop"},
                ]
                frames = b"".join(bedrock_chunk(event) for event in events)
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.amazon.eventstream")
                self.send_header("Content-Length", str(len(frames)))
                self.end_headers()
                self.wfile.write(frames)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def _message() -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-sonnet-4-6",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 900, "output_tokens": 1},
    }


@pytest.fixture
def bedrock(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> Iterator[BedrockStandIn]:
    stand_in = BedrockStandIn()
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", stand_in.url)
    # What the wiring builds from the Chunk function's settings (checked below) for the stack's
    # ChunkContext=model: the Bedrock model of ChatModelId.
    pipeline.services.notes_model = claude_model(
        provider="bedrock", model_id=MODEL_ID, region=REGION, max_retries=0
    )
    yield stand_in
    stand_in.close()


def _notice(second: str) -> bytes:
    return make_pdf([[("h1", "Ferries"), ("body", HARBOUR)], [("h1", "Bridges"), ("body", second)]])


def test_chunks_carry_their_notes_into_the_index_and_a_new_version_asks_only_for_changes(
    pipeline: Pipeline, bedrock: BedrockStandIn
) -> None:
    run = pipeline.upload("notices/harbour.pdf", _notice(BRIDGE))
    assert run["status"] == "SUCCEEDED", run

    # Each chunk was noted once, through Bedrock's streaming endpoint for the profile
    index = pipeline.services.index
    assert bedrock.paths and all(
        path == f"/model/{MODEL_ID}/invoke-with-response-stream" for path in bedrock.paths
    )
    noted = len(bedrock.paths)
    # The note is searched with its chunk, and the chunk's text stays the page's
    (hit, *_) = index.keyword_search("quokka", k=3)
    chunk = index.chunks([hit[0]])[hit[0]]
    assert chunk.page_start == 1 and "quokka" in chunk.note and "quokka" not in chunk.text
    (hit, *_) = index.keyword_search("wombat", k=3)
    assert index.chunks([hit[0]])[hit[0]].page_start == 2
    # The notes are kept beside the document's pages
    doc_id = chunk.doc_id
    stored = json.loads(
        pipeline.s3.get_object(Bucket=ARTIFACTS_BUCKET, Key=notes_key(doc_id))["Body"].read()
    )
    assert len(stored) == noted

    # A new version with page 1 unchanged: only the changed chunks are asked for
    run = pipeline.upload("notices/harbour.pdf", _notice(CLOSED))
    assert run["status"] == "SUCCEEDED", run
    changed = bedrock.passages[noted:]
    assert changed and all("closed" in passage for passage in changed)
    assert index.keyword_search("quokka", k=3)

    # Deleting the document deletes its notes
    assert pipeline.delete("notices/harbour.pdf")["status"] == "SUCCEEDED"
    listed = pipeline.s3.list_objects_v2(Bucket=ARTIFACTS_BUCKET, Prefix="notes/")
    assert listed.get("KeyCount", 0) == 0


def _chunk_settings(environ: dict[str, str]) -> ChunkSettings:
    required = {"DOCCHAT_DOCUMENTS_TABLE": TABLE, "DOCCHAT_ARTIFACTS_BUCKET": ARTIFACTS_BUCKET}
    return ChunkSettings.from_env({**required, **environ}, reader="the chunk function")


def test_the_chunk_function_takes_its_notes_model_from_the_stack_settings() -> None:
    environ = {"DOCCHAT_MODEL_ID": MODEL_ID, "DOCCHAT_REGION": REGION}
    # As the template sets the Chunk function: ChunkContext=off
    off = CloudServices(_chunk_settings({**environ, "DOCCHAT_CHUNK_CONTEXT": "off"}))
    assert off.notes_model is None
    # ChunkContext=model: Claude on Bedrock
    on = {**environ, "DOCCHAT_CHUNK_CONTEXT": "model", "DOCCHAT_MODEL_PROVIDER": "bedrock"}
    model = CloudServices(_chunk_settings(on)).notes_model
    assert model is not None and model.model_id == MODEL_ID
    # Notes without a model say what to set
    alone = {**environ, "DOCCHAT_CHUNK_CONTEXT": "model", "DOCCHAT_MODEL_PROVIDER": "none"}
    with pytest.raises(ConfigError, match="DOCCHAT_CHUNK_CONTEXT=model needs a chat model"):
        _ = CloudServices(_chunk_settings(alone)).notes_model


def test_a_throttled_model_is_tried_again_and_the_chunk_step_resumes_from_its_notes(
    pipeline: Pipeline, bedrock: BedrockStandIn
) -> None:
    # Given Bedrock throttling the notes model once the first notes are written
    bedrock.throttle_next = 0
    run = pipeline.upload("notices/first.pdf", _notice(BRIDGE))
    assert run["status"] == "SUCCEEDED", run
    chunks = len(bedrock.paths)
    bedrock.paths.clear()
    bedrock.throttle_next = 2
    invoked = pipeline.calls["chunk"]

    # When a document is ingested while the model is throttled
    run = pipeline.upload("notices/second.pdf", _notice(CLOSED))

    # Then the state machine runs Chunk again and the document is indexed with every note
    assert run["status"] == "SUCCEEDED", run
    assert pipeline.calls["chunk"] - invoked >= 2
    assert len(bedrock.paths) == chunks  # each note written once, none asked for twice
    assert pipeline.services.index.keyword_search("wombat", k=5)
