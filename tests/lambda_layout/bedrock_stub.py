"""A loopback stand-in for bedrock-runtime: InvokeModel with Titan Text Embeddings V2, and
InvokeModelWithResponseStream with Claude replaying recorded turns.

Titan request and response bodies as documented:
https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html
(request {"inputText", "dimensions", "normalize"}; response {"embedding", "inputTextTokenCount",
"embeddingsByType"}). The vectors are word hashes, so texts sharing words are close.

Claude: the recorded Messages API turns in tests/fixtures/anthropic (tool_use_turn.sse first,
then text_turn.sse once the request carries a tool result), each event re-framed as an AWS
event-stream `chunk` message whose payload is {"bytes": base64 of the event}, as
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html
documents, in the binary framing of
https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html
(tests/unit/test_anthropic_model.py builds the frames).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote

from tests.lambda_layout.loopback import LoopbackServer
from tests.unit.test_anthropic_model import bedrock_chunk, sse_events

TITAN_V2 = "amazon.titan-embed-text-v2:0"
INVOKE = re.compile(r"^/model/(?P<model>[^/]+)/invoke$")
STREAM = re.compile(r"^/model/(?P<model>[^/]+)/invoke-with-response-stream$")
FRAME_GAP_S = 0.02  # between events, so that streaming (not buffering) shows downstream


def word_vector(text: str, dimension: int) -> list[float]:
    vector = [0.0] * dimension
    for word in re.findall(r"[a-z]+", text.casefold()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dimension] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class _Handler(BaseHTTPRequestHandler):
    server: BedrockStub

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        streamed = STREAM.match(self.path)
        if streamed and "anthropic" in unquote(streamed["model"]):
            self._replay(unquote(streamed["model"]), request)
            return
        match = INVOKE.match(self.path)
        if not match or unquote(match["model"]) != TITAN_V2:
            self._answer(404, {"message": f"the stub answers InvokeModel for {TITAN_V2} only"})
            return
        text = str(request.get("inputText", ""))
        vector = word_vector(text, int(request.get("dimensions", 1024)))
        self.server.calls += 1
        self._answer(
            200,
            {
                "embedding": vector,
                "inputTextTokenCount": len(text.split()),
                "embeddingsByType": {"float": vector},
            },
        )

    def _replay(self, model: str, request: dict[str, object]) -> None:
        answered_tool = "tool_result" in json.dumps(request.get("messages", []))
        turn = "text_turn.sse" if answered_tool else "tool_use_turn.sse"
        self.server.claude_requests.append((model, request))
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.end_headers()
        for event in sse_events(turn):
            self.wfile.write(bedrock_chunk(event))
            self.wfile.flush()
            time.sleep(FRAME_GAP_S)

    def _answer(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status != 200:
            self.send_header("x-amzn-ErrorType", "ValidationException")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


class BedrockStub(LoopbackServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.calls = 0
        self.claude_requests: list[tuple[str, dict[str, object]]] = []
