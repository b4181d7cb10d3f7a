"""Every AWS operation each function makes is allowed by its role in the SAM-translated
template, action and resource, and each role grants nothing its function does not use.

One run drives every function's real code under moto: the real state machine with the real
step handlers (a PDF with a scanned page through Register, Convert, OCR, Chunk, Embed, Index,
Finalize; a broken file to MarkFailed; a deletion to Remove), the watchdog with its documented
event, and the chat function's app on every route that reaches AWS (documents, page text, file
link, upload URLs, move, delete, conversations, /health, a chat whose search embeds and
reranks). Bedrock is answered by `before-call` handlers (moto's Bedrock answers `{}`);
OpenSearch is the embedded index here (opensearch-py is not botocore): its permissions are
declared below with their reasons, as are the Claude calls the anthropic SDK makes over httpx.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import boto3
import botocore.session
import numpy as np
import pypdfium2 as pdfium
import pytest
from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody
from fastapi.testclient import TestClient
from moto.awslambda_simple.models import LambdaSimpleBackend

from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.serve.access import GROUPS_KEY
from tests.aws_events import execution_event
from tests.chatkit import ScriptedModel
from tests.conftest import table_schema
from tests.functions import conftest as pipeline_kit
from tests.functions.conftest import (
    ACCOUNT,
    ARTIFACTS_BUCKET,
    DOCS_BUCKET,
    REGION,
    TABLE,
    FakeContext,
    Pipeline,
    _load_handler,
    running_pipeline,
)
from tests.infra.iam import Call, Recorder, Request, Role, authorizations, model_arn
from tests.infra.intrinsics import Stack
from tests.infra.sync_run import synced_sources
from tests.infra.test_sam_transform import _translate
from tests.pdfgen import make_pdf, scanned_copy

# The ingestion state machine under moto and SAM's translator: `make test`, not `make unit`.
pytestmark = pytest.mark.slow
CONVERSATIONS = "docchat-conversations"
COLLECTION_ARN = f"arn:aws:aoss:{REGION}:{ACCOUNT}:collection/docchatcollection"
#: Each function folder's logical id in template.yaml.
FUNCTIONS = {
    "register": "RegisterFunction",
    "convert": "ConvertFunction",
    "ocr": "OcrFunction",
    "chunk": "ChunkFunction",
    "embed": "EmbedFunction",
    "index": "IndexFunction",
    "finalize": "FinalizeFunction",
    "mark_failed": "MarkFailedFunction",
    "remove": "RemoveFunction",
    "watchdog": "WatchdogFunction",
    "sync": "SyncFunction",
    "chat": "ChatFunction",
}
#: The template's resources under the names the tests give them.
KNOWN = {
    "DocumentsBucket": DOCS_BUCKET,
    "DocumentsBucket.Arn": f"arn:aws:s3:::{DOCS_BUCKET}",
    "ArtifactsBucket": ARTIFACTS_BUCKET,
    "ArtifactsBucket.Arn": f"arn:aws:s3:::{ARTIFACTS_BUCKET}",
    "DocumentsTable": TABLE,
    "DocumentsTable.Arn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}",
    "ConversationsTable": CONVERSATIONS,
    "ConversationsTable.Arn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{CONVERSATIONS}",
    "VectorCollection.Arn": COLLECTION_ARN,
    "IngestStateMachine.Name": "ingest",
}
_OPENSEARCH = (
    "OpenSearch through opensearch-py signed with SigV4, not botocore (the tests index into "
    "the embedded SQLite index); tests/unit/test_opensearch_index.py covers its requests"
)
_LIST_FOR_404 = (
    "never called: S3 answers a GetObject/HeadObject of a missing key with 404 only to a "
    "caller that may list the bucket, 403 otherwise (S3 user guide, GetObject permissions)"
)
#: Granted actions no recorded call uses, each with why the role needs it.
EXPLAINED: dict[tuple[str, str], str] = {
    **{
        (function, action): _OPENSEARCH
        for function in ("index", "finalize", "mark_failed", "remove", "watchdog", "chat")
        for action in ("aoss:APIAccessAll", "es:ESHttpGet", "es:ESHttpPost")
    },
    **{
        (function, action): _OPENSEARCH + " (HEAD and PUT: index exists, create, mapping)"
        for function in ("index", "finalize", "mark_failed", "remove", "watchdog")
        for action in ("es:ESHttpHead", "es:ESHttpPut")
    },
    # A missing key must read as missing: a deleted upload is skipped, not failed.
    ("register", "s3:ListBucket"): _LIST_FOR_404,
    ("convert", "s3:ListBucket"): _LIST_FOR_404,
    ("ocr", "s3:ListBucket"): _LIST_FOR_404,
    ("remove", "s3:ListBucket"): _LIST_FOR_404,
    # A document's first notes. (The chat function lists sources/ for /health.)
    ("chunk", "s3:ListBucket"): _LIST_FOR_404,
    # SAM's statement for EventInvokeConfig's OnFailure queue: Lambda itself sends a failed
    # asynchronous event there with the function's role; the code never calls SQS.
    ("watchdog", "sqs:SendMessage"): "Lambda's on-failure destination, sent by Lambda",
    ("sync", "sqs:SendMessage"): "Lambda's on-failure destination, sent by Lambda",
}
#: Calls made outside botocore, checked against the role like recorded ones.
CHAT_PROFILE = (
    f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/global.anthropic.claude-sonnet-4-6"
)
DECLARED: dict[str, list[tuple[Request, str]]] = {
    "chat": [
        (
            Request("bedrock:InvokeModelWithResponseStream", CHAT_PROFILE),
            "Claude streams through the anthropic SDK's AnthropicBedrock (httpx)",
        ),
        (
            Request(
                "bedrock:InvokeModelWithResponseStream",
                "arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-sonnet-4-6",
                (("bedrock:InferenceProfileArn", CHAT_PROFILE),),
            ),
            "the global profile routes the request to its model in any Region",
        ),
        (
            Request("bedrock:InvokeModel", CHAT_PROFILE),
            "the anthropic SDK's non-streamed calls (max_tokens probes, retries)",
        ),
        (
            Request(
                "bedrock:InvokeModel",
                "arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-sonnet-4-6",
                (("bedrock:InferenceProfileArn", CHAT_PROFILE),),
            ),
            "as above, routed to the profile's model",
        ),
    ]
}
# OpenSearch Serverless's data access policy permissions for the OpenSearch API operations each
# function's index adapter makes (docchat.adapters.opensearch_index): "Supported operations and
# plugins in Amazon OpenSearch Serverless",
# https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-genref.html
# (read 2026-12-01): aoss:ReadDocument for _search/_count and document reads, aoss:DescribeIndex
# for HEAD/GET <index>, aoss:CreateIndex for PUT <index>, aoss:UpdateIndex for PUT _mapping,
# aoss:WriteDocument for _bulk and deletes. The chat function only searches, counts and reads.
_WRITER = {
    "aoss:CreateIndex",
    "aoss:DescribeIndex",
    "aoss:UpdateIndex",
    "aoss:ReadDocument",
    "aoss:WriteDocument",
}
DATA_PLANE = {
    "index": _WRITER,
    "finalize": _WRITER,
    "mark_failed": _WRITER,
    "remove": _WRITER,
    "watchdog": _WRITER,
    "chat": {"aoss:DescribeIndex", "aoss:ReadDocument"},
}


# --- Bedrock's answers, given in botocore's before-call (the request never leaves) ---------------
def _vector(text: str, dimension: int) -> list[float]:
    vector = np.zeros(dimension)
    for word in re.findall(r"[a-z]+", text.casefold()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dimension] += 1
    return [float(v) for v in vector]


def _answered(parsed: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    return AWSResponse("https://bedrock.test", 200, {}, None), parsed


def _titan(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
    body = json.loads(params["body"])
    payload = json.dumps(
        {"embedding": _vector(body["inputText"], body["dimensions"]), "inputTextTokenCount": 1}
    ).encode()
    return _answered({"body": StreamingBody(io.BytesIO(payload), len(payload))})


def _rerank(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
    sources = json.loads(params["body"])["sources"]
    results = [{"index": n, "relevanceScore": 1.0 / (n + 1)} for n in range(len(sources))]
    return _answered({"results": results})


def _foundation_model(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
    return _answered({"modelDetails": {"modelLifecycle": {"status": "ACTIVE"}}})


def _bedrock_answers(client: Any) -> None:
    events = client.meta.events
    events.register("before-call.bedrock-runtime.InvokeModel", _titan)
    events.register("before-call.bedrock-agent-runtime.Rerank", _rerank)
    events.register("before-call.bedrock.GetFoundationModel", _foundation_model)


# --- the run -------------------------------------------------------------------------------------
def _one_at_a_time(definition: str) -> str:
    """The state machine with each Map running one item at a time, so one handler runs at once."""
    text = re.sub(r'"MaxConcurrency": \d+', '"MaxConcurrency": 1', definition)
    assert '"MaxConcurrency": 1' in text
    return text


def _scan_and_text() -> bytes:
    scan = scanned_copy(make_pdf([[("h1", "Ferry"), ("body", "The ferry leaves at noon.")]]))
    typed = make_pdf([[("h1", "Locks"), ("body", "Boats rise in the lock chamber.")]])
    merged = pdfium.PdfDocument.new()
    for part in (scan, typed):
        merged.import_pages(pdfium.PdfDocument(part))
    buffer = io.BytesIO()
    merged.save(buffer)
    return buffer.getvalue()


def _ingestion(pipeline: Pipeline, recorder: Recorder) -> str:
    """Every step function's calls; the id of the indexed document."""
    done = pipeline.upload("ferries/schedule.pdf", _scan_and_text(), timeout=600)
    assert done["status"] == "SUCCEEDED", done
    entered = pipeline.states_entered(done)
    assert {"Ocr", "Embed", "Index", "Finalize"} <= set(entered), entered
    # A document replaced (Finalize drops the old version's pages), then a version that fails
    # (MarkFailed drops the others'), a run that stops outside any Catch (the watchdog asks
    # Step Functions why and drops them too), and its deletion (Remove).
    key = "ferries/notes.pdf"
    for n, body in enumerate(["Boats rise.", "Boats rise and fall."]):
        replaced = pipeline.upload(key, make_pdf([[("h1", "Locks"), ("body", body)]]))
        assert replaced["status"] == "SUCCEEDED", (n, replaced)
    broken = pipeline.upload(key, b"%PDF-1.7 not really")
    assert "MarkFailed" in pipeline.states_entered(broken)
    again = pipeline.upload(key, make_pdf([[("h1", "Locks"), ("body", "Boats wait.")]]))
    assert again["status"] == "SUCCEEDED", again
    pipeline.s3.put_object(Bucket=DOCS_BUCKET, Key=key, Body=make_pdf([[("body", "Stuck.")]]))
    started = pipeline.event("Object Created", key)
    stuck = broken["executionArn"]
    with recorder.running("register"):
        claim = {"event": started, "execution_id": stuck}
        _load_handler("register").handler(claim, FakeContext("register"))
    event = execution_event("execution-failed", input_event=started, execution_arn=stuck)
    with recorder.running("watchdog"):
        _load_handler("watchdog").handler(event, FakeContext("watchdog"))
    deleted = pipeline.delete(key)
    assert "Remove" in pipeline.states_entered(deleted)
    [record] = [
        r for r in pipeline.services.registry.documents() if r.source.endswith("schedule.pdf")
    ]
    return record.doc_id


class _Claude(ScriptedModel):
    model_id = "global.anthropic.claude-sonnet-4-6"


def _chat(monkeypatch: pytest.MonkeyPatch, recorder: Recorder, index: Any, doc_id: str) -> None:
    """The chat function's calls on every route that reaches AWS."""
    from docchat.wiring.cloud import cloud_app, services

    with recorder.harness():
        s3 = boto3.client("s3", region_name=REGION)
        groups = {"admin_groups": ["admins"], "groups": {}}
        s3.put_object(Bucket=ARTIFACTS_BUCKET, Key=GROUPS_KEY, Body=json.dumps(groups).encode())
        boto3.resource("dynamodb", region_name=REGION).create_table(
            TableName=CONVERSATIONS, **table_schema("ConversationsTable")
        )
    for name, value in {
        "DOCCHAT_API_AUTH": "COGNITO",
        "DOCCHAT_AUTH_DOMAIN": "https://docchat-x.auth.us-east-1.amazoncognito.com",
        "DOCCHAT_AUTH_CLIENT_ID": "abc123",
        "DOCCHAT_DOCUMENTS_BUCKET": DOCS_BUCKET,
        "DOCCHAT_CONVERSATIONS_TABLE": CONVERSATIONS,
        "DOCCHAT_MODEL_PROVIDER": "bedrock",
        "DOCCHAT_MODEL_ID": _Claude.model_id,
        "DOCCHAT_RERANKER": "bedrock",
    }.items():
        monkeypatch.setenv(name, value)
    services.cache_clear()
    live = services("chat")
    search = ToolUse(id="t1", name="search_documents", input={"query": "ferry noon"})
    answer = [TextDelta("The ferry leaves at noon."), TurnEnd("end_turn", 9, 6)]
    live.__dict__.update(index=index, model=_Claude([[search, TurnEnd("tool_use", 9, 3)], answer]))
    claims = {"authorizer": {"claims": {"sub": "root-sub", "cognito:groups": "admins"}}}
    headers = {"x-amzn-request-context": json.dumps(claims)}
    with recorder.running("chat"), TestClient(cloud_app(), headers=headers) as client:
        replies = [
            client.get("/documents"),
            client.get(f"/documents/{doc_id}"),
            client.get(f"/documents/{doc_id}/pages/2"),
            client.get(f"/documents/{doc_id}/file"),
            client.post("/documents/upload-url", json={"filename": "a.pdf", "size": 10}),
            client.post(
                "/documents/upload-url",
                json={"filename": "b.pdf", "size": 10, "collection": "finance"},
            ),
            client.post(
                "/chat",
                json={
                    "messages": [{"role": "user", "content": "When does the ferry leave?"}],
                    "conversation_id": "c-1",
                },
            ),
            client.get("/conversations"),
            client.get("/conversations/c-1"),
            client.put("/conversations/c-1/answers/1/feedback", json={"rating": "up"}),
            client.get("/feedback"),
            client.delete("/feedback"),
            client.delete("/conversations/c-1"),
            client.get("/health"),
            client.put(f"/documents/{doc_id}/collections", json={"collections": ["finance"]}),
            client.delete(f"/documents/{doc_id}"),
        ]
    # Every route answered (the move is judged by the role check, not here: moto enforces no IAM)
    for reply in replies:
        assert reply.status_code < 500, (reply.request.url, reply.status_code, reply.text)
    assert "The ferry leaves at noon." in replies[6].text
    # the admin's export held the rating just made, and clearing cleared it
    assert [r.status_code for r in replies[9:12]] == [200, 200, 200], replies[10].text
    assert '"rating":"up"' in replies[10].text and replies[11].json() == {"cleared": 1}
    # /health shows the stack's sources and their last syncs (read from the artifacts bucket)
    shown = replies[13].json()["checks"]["sources"]["sources"]
    assert [(s["name"], s["documents"]) for s in shown] == [("handbook", 1), ("wiki", 0)], shown
    services.cache_clear()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Call]]:
    recorder = Recorder()
    with pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        recorder.install(monkeypatch)
        real = botocore.session.Session.create_client

        def answering(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = real(session, *args, **kwargs)
            _bedrock_answers(client)
            return client

        monkeypatch.setattr(botocore.session.Session, "create_client", answering)
        monkeypatch.setattr(pipeline_kit, "_definition", _wrapped_definition())
        tmp = tmp_path_factory.mktemp("roles")
        with recorder.harness():
            pipeline = stack.enter_context(running_pipeline(monkeypatch, tmp))
        from docchat.adapters.bedrock_embedder import TitanEmbedder

        # Titan through botocore (its client is made on first use, inside Embed).
        pipeline.services.embedder = TitanEmbedder(dimension=256, concurrency=2, region=REGION)
        dispatch = LambdaSimpleBackend.invoke

        def invoke(self: Any, function_name: str, *args: Any) -> Any:
            with recorder.running(function_name.rsplit(":", 1)[-1]):
                return dispatch(self, function_name, *args)

        monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
        doc_id = _ingestion(pipeline, recorder)
        synced_sources(monkeypatch, recorder)
        _chat(monkeypatch, recorder, pipeline.services.index, doc_id)
        yield recorder.calls


def _wrapped_definition() -> Any:
    real = pipeline_kit._definition

    def definition(**kwargs: Any) -> str:
        return _one_at_a_time(real(**kwargs))

    return definition


@pytest.fixture(scope="module")
def resources() -> dict[str, dict[str, Any]]:
    """The translated template's resources with the default parameters, as deployed."""
    return Stack(_translate("COGNITO"), known=KNOWN).resources()


def _roles(resources: dict[str, dict[str, Any]]) -> dict[str, Role]:
    return {
        function: Role.of(f"{logical}Role", resources[f"{logical}Role"]["Properties"])
        for function, logical in FUNCTIONS.items()
    }


def _requests(calls: list[Call]) -> dict[str, list[tuple[Request, str]]]:
    """Each function's authorizations: recorded calls, then declared ones."""
    found: dict[str, list[tuple[Request, str]]] = {name: [] for name in FUNCTIONS}
    for call in calls:
        found[call.function] += [(r, str(call)) for r in authorizations(call)]
    for function, declared in DECLARED.items():
        found[function] += declared
    return found


def test_every_function_ran_and_called_aws(recorded: list[Call]) -> None:
    # The recording is only as good as its coverage: every function made calls.
    assert {c.function for c in recorded} == set(FUNCTIONS)
    chat = {(c.service, c.operation, c.presigned) for c in recorded if c.function == "chat"}
    assert ("dynamodb", "UpdateItem", False) in chat  # the move
    assert ("s3", "PutObject", True) in chat  # an upload URL
    assert ("bedrock-agent-runtime", "Rerank", False) in chat


def test_every_recorded_call_is_allowed_by_its_role(
    recorded: list[Call], resources: dict[str, dict[str, Any]]
) -> None:
    roles = _roles(resources)
    refused = sorted(
        {
            f"{function} ({roles[function].name}) may not {request}  <- {source}"
            for function, requests in _requests(recorded).items()
            for request, source in requests
            if not roles[function].allows(request)
        }
    )
    assert not refused, "\n".join(refused)


def test_every_granted_action_is_used_or_explained(
    recorded: list[Call], resources: dict[str, dict[str, Any]]
) -> None:
    roles = _roles(resources)
    requests = _requests(recorded)
    unused = set()
    for function, role in roles.items():
        for statement in role.statements:
            for action in statement.granted():
                used = any(
                    r.action.lower() == action.lower() and statement.applies(r)
                    for r, _ in requests[function]
                )
                if not used:
                    unused.add((function, action))
    unexplained = sorted(unused - set(EXPLAINED))
    assert not unexplained, f"granted but never called (drop them or explain): {unexplained}"
    # An explanation of a grant that is gone, or now used, is stale.
    assert sorted(set(EXPLAINED) - unused) == []


def test_collection_data_access_gives_each_role_what_its_index_adapter_needs(
    resources: dict[str, dict[str, Any]],
) -> None:
    policy = json.loads(resources["CollectionAccessPolicy"]["Properties"]["Policy"])
    granted: dict[str, set[str]] = {}
    for entry in policy:
        permissions = {p for rule in entry["Rules"] for p in rule["Permission"]}
        for rule in entry["Rules"]:
            assert rule["ResourceType"] == "index", rule
        for principal in entry["Principal"]:
            granted.setdefault(principal, set()).update(permissions)
    expected = {f"<{FUNCTIONS[f]}Role.Arn>": wanted for f, wanted in DATA_PLANE.items()}
    assert granted == expected


def test_model_arn_tells_profiles_from_foundation_models() -> None:
    assert model_arn("amazon.titan-embed-text-v2:0", "us-east-1") == (
        "arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0"
    )
    assert model_arn("eu.anthropic.claude-sonnet-4-6", "eu-west-1") == (
        f"arn:aws:bedrock:eu-west-1:{ACCOUNT}:inference-profile/eu.anthropic.claude-sonnet-4-6"
    )
