"""The post-deploy check: a real PDF through the deployed pipeline and chat API, then replaced,
its old version deleted, and itself deleted. Run it with `make e2e STACK=<name>`."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from docchat.ingest.decision import doc_id_for, version_of
from tests.conftest import EXAMPLES
from tests.e2e.check import (
    ChatReply,
    Stack,
    changed_pdf,
    duplicate_passages,
    ingest_outcome,
    misplaced_quotes,
    page_texts,
    stale_passages,
)
from tests.e2e.live import (
    Auth,
    ChatApi,
    Executions,
    Registry,
    TokenAuth,
    ask_until,
    cognito_user,
    leave_no_trace,
    log,
    now,
    wait_indexed,
    wait_listed,
    wait_removed,
)
from tests.pdfgen import scanned_copy

PDF = EXAMPLES / "dmca.pdf"
QUESTION = "What does the DMCA say about circumvention of technological protection measures?"
SEARCH_FIRST = "Search the documents to answer. "
ENDED_BADLY = ("FAILED", "TIMED_OUT", "ABORTED")


def test_stack_first_use_of_each_model_is_made_by_the_deployer(stack: Stack, session: Any) -> None:
    """First in the file: the chat and rerank models' first use in an account starts their
    AWS Marketplace subscription, which needs aws-marketplace:Subscribe and ViewSubscriptions
    (Bedrock user guide, "Access Amazon Bedrock foundation models", and "Prerequisites for
    reranking"). The functions' roles are not given those: this one call per model, with the
    deployer's credentials, is the documented post-deploy step (docs/aws.md, "Model access:
    the first use of the models"), and the checks below then find the models answering the
    functions."""
    from docchat.adapters.bedrock_reranker import BedrockReranker, not_offered
    from docchat.models import Chunk, Passage

    def first_use(what: str, call: Any) -> None:
        try:
            call()
        except Exception as exc:
            raise AssertionError(
                f"the first call of {what} failed with your credentials ({exc}). Its first use "
                "in the account needs aws-marketplace:Subscribe and "
                "aws-marketplace:ViewSubscriptions for the caller (and, for Anthropic models, "
                "the one-time use-case form in the Bedrock console); a subscription can take "
                "up to 15 minutes: run make e2e again then"
            ) from exc

    runtime = session.client("bedrock-runtime")
    first_use(
        stack.chat_model_id,
        lambda: runtime.converse(
            modelId=stack.chat_model_id,
            messages=[{"role": "user", "content": [{"text": "Answer with the word ready."}]}],
            inferenceConfig={"maxTokens": 8},
        ),
    )
    region = session.region_name or ""
    if not stack.rerank_model_id or not_offered(stack.rerank_model_id, region):
        return
    reranker = BedrockReranker(
        client=session.client("bedrock-agent-runtime"), model_id=stack.rerank_model_id
    )
    passages = [
        Passage(
            chunk=Chunk(
                chunk_id=f"c{n}",
                doc_id="d",
                version="v",
                source="s",
                title="t",
                headings=[],
                page_start=1,
                page_end=1,
                text=text,
            ),
            score=1.0,
        )
        for n, text in enumerate(("Bridges cross rivers.", "Tunnels pass under hills."))
    ]
    first_use(stack.rerank_model_id, lambda: reranker.rerank("rivers", passages, top_n=1))


def test_stack_chat_api_url_ends_with_a_slash(stack: Stack) -> None:
    # The page's relative URLs drop the stage without it (issue 11, defect 3).
    assert stack.api_url.endswith("/"), f"ChatApiUrl {stack.api_url!r} must end with '/'"


def test_stack_api_refuses_a_caller_without_credentials(stack: Stack) -> None:
    if stack.auth == "NONE":
        pytest.skip("ApiAuth=NONE: the API is open on purpose")
    response = ChatApi(stack, Auth()).get("documents")
    assert response.status_code in (401, 403), (
        f"GET documents without credentials answered {response.status_code} under "
        f"ApiAuth={stack.auth}: {response.text[:300]}"
    )


@pytest.fixture
def document_key(stack: Stack, session: Any, run_id: str) -> Iterator[str]:
    key = f"docchat-e2e/{run_id}/{PDF.name}"
    yield key
    leave_no_trace(session, stack, key, doc_id_for(f"{stack.bucket}/{key}"))


def test_stack_indexes_answers_replaces_and_forgets_a_pdf(
    stack: Stack, session: Any, api: ChatApi, run_id: str, document_key: str
) -> None:
    s3 = session.client("s3")
    key = document_key
    doc_id = doc_id_for(f"{stack.bucket}/{key}")
    registry, executions = Registry(session, stack), Executions(session, stack, key)
    first = PDF.read_bytes()
    second = changed_pdf(first, run_id)
    old, new = version_of(first), version_of(second)
    pages = page_texts(first)  # the changed bytes carry the same pages
    started = now()

    def quotes_on_their_pages(reply: ChatReply) -> None:
        wrong = misplaced_quotes(reply.citations_of(doc_id), pages)
        assert not wrong, f"cited quotes not on their cited pages: {wrong}"

    log.info("1. upload s3://%s/%s (doc_id %s) and wait for INDEXED", stack.bucket, key, doc_id)
    first_version_id = s3.put_object(
        Bucket=stack.bucket, Key=key, Body=first, ContentType="application/pdf"
    )["VersionId"]
    wait_indexed(registry, executions, doc_id, old, since=started)
    wait_listed(
        api,
        lambda listed: listed.get(doc_id, {}).get("status") == "INDEXED",
        f"{doc_id} INDEXED",
    )

    log.info("2. ask through the streamed API; every cited quote must be on its page")
    ask_until(
        api,
        QUESTION,
        doc_ids=[doc_id],
        ready=lambda reply: bool(reply.citations_of(doc_id)),
        check=quotes_on_their_pages,
        what="an answer citing the uploaded PDF",
    )

    log.info("2b. open the PDF as the page's viewer does: a presigned GET from the page's origin")
    link = api.get(f"documents/{doc_id}/file")
    assert link.status_code == 200, f"GET documents/{doc_id}/file: {link.text[:300]}"
    origin = "{0.scheme}://{0.netloc}".format(httpx.URL(stack.api_url))
    pdf = httpx.get(link.json()["url"], headers={"Origin": origin}, timeout=60)
    assert pdf.status_code == 200 and pdf.content == first, (
        f"the presigned GET answered {pdf.status_code}: {pdf.text[:300]}"
    )
    # pdf.js fetches it cross-origin: the bucket's CORS rule must let the page read it
    # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html).
    allowed = pdf.headers.get("access-control-allow-origin")
    assert allowed in ("*", origin), f"the bucket's CORS answer lets {allowed!r} read, not {origin}"
    shown = api.get(f"documents/{doc_id}/pages/1")
    assert shown.status_code == 200, shown.text[:300]
    assert shown.json()["page"] == 1 and "DIGITAL MILLENNIUM" in shown.json()["text"]

    log.info("3. upload changed bytes to the same key; the old version's chunks must go")
    s3.put_object(Bucket=stack.bucket, Key=key, Body=second, ContentType="application/pdf")
    wait_indexed(registry, executions, doc_id, new, since=started)
    wait_listed(
        api,
        lambda listed: listed.get(doc_id, {}).get("version") == new,
        f"{doc_id} at version {new[:12]}",
    )

    def only_the_new_version(reply: ChatReply) -> None:
        # Both versions have the same text: only the version in the chunk ids tells them apart,
        # and a document indexed twice shows up as repeated passages.
        passages = reply.passages_of(doc_id)
        assert not stale_passages(passages, new), (
            f"search returned chunks of the replaced version: {stale_passages(passages, new)}"
        )
        assert not duplicate_passages(passages), duplicate_passages(passages)
        quotes_on_their_pages(reply)

    ask_until(
        api,
        QUESTION,
        doc_ids=[doc_id],
        ready=lambda reply: bool(reply.passages_of(doc_id) and reply.citations_of(doc_id)),
        check=only_the_new_version,
        what="an answer from the new version",
    )

    log.info("4. delete the noncurrent version; the document must stay INDEXED and answerable")
    # S3 Lifecycle's NoncurrentVersionExpiration cannot be triggered on demand (it runs about a
    # day after a version becomes due). A permanent DeleteObject of that version sends the same
    # `Object Deleted` event (deletion-type "Permanently Deleted") with reason "DeleteObject"
    # instead of "Lifecycle Expiration": https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventBridge.html
    known, since = executions.known(since=started), now()
    s3.delete_object(Bucket=stack.bucket, Key=key, VersionId=first_version_id)
    runs = executions.settle(since=since, known=known)
    failed = [f"{r['name']}: {r['status']}" for r in runs if r["status"] in ENDED_BADLY]
    assert not failed, f"deleting a noncurrent version made the pipeline fail: {failed}"
    item = registry.item(doc_id)
    assert ingest_outcome(item, new) == "INDEXED", (
        f"deleting the noncurrent version changed the live document: {item}"
    )
    ask_until(
        api,
        QUESTION,
        doc_ids=[doc_id],
        ready=lambda reply: bool(reply.citations_of(doc_id)),
        check=only_the_new_version,
        what="an answer after the noncurrent version was deleted",
    )

    log.info("5. delete the object (a delete marker); the document and its chunks must go")
    since = now()
    s3.delete_object(Bucket=stack.bucket, Key=key)
    wait_removed(registry, executions, doc_id, since=since)
    wait_listed(api, lambda listed: doc_id not in listed, f"{doc_id} gone")
    assert api.get(f"documents/{doc_id}").status_code == 404

    def no_passage_of_the_document(reply: ChatReply) -> None:
        found = [p["chunk_id"] for p in reply.passages_of(doc_id)]
        assert not found, f"search still returns chunks of the deleted document: {found}"

    # Over every document (a filter on a forgotten id is refused with 404); the answer only
    # tells something once the model has searched.
    ask_until(
        api,
        SEARCH_FIRST + QUESTION,
        doc_ids=None,
        ready=lambda reply: reply.searched(),
        check=no_passage_of_the_document,
        what="an answer that searched the documents",
    )


def test_stack_keeps_a_users_conversation_in_its_table_for_that_user_only(
    stack: Stack, session: Any, api: ChatApi, run_id: str
) -> None:
    conversation_id = str(uuid.uuid4())
    question = "Which documents are there?"
    log.info("a question saved in conversation %s (the conversations table)", conversation_id)
    api.ask(question, conversation_id=conversation_id)
    listed = api.get("conversations")
    assert listed.status_code == 200, listed.text[:300]
    assert conversation_id in [c["id"] for c in listed.json()["conversations"]]
    saved = api.get(f"conversations/{conversation_id}").json()
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant"]
    assert saved["messages"][0]["content"] == question and saved["title"] == question
    try:
        if stack.auth == "COGNITO":
            # Another signed-in user neither lists nor reads it (the table's key is the sub).
            with cognito_user(session, stack, f"{run_id}-other") as other:
                theirs = ChatApi(stack, TokenAuth(other))
                assert conversation_id not in [
                    c["id"] for c in theirs.get("conversations").json()["conversations"]
                ]
                assert theirs.get(f"conversations/{conversation_id}").status_code == 404
                assert theirs.call("DELETE", f"conversations/{conversation_id}").status_code == 404
    finally:
        assert api.call("DELETE", f"conversations/{conversation_id}").status_code == 200
    assert api.get(f"conversations/{conversation_id}").status_code == 404


@pytest.fixture
def scan_key(stack: Stack, session: Any, run_id: str) -> Iterator[str]:
    key = f"docchat-e2e/{run_id}/scanned-{PDF.name}"
    yield key
    leave_no_trace(session, stack, key, doc_id_for(f"{stack.bucket}/{key}"))


def test_stack_ocrs_a_scanned_pdf_in_its_image_function(
    stack: Stack, session: Any, api: ChatApi, scan_key: str
) -> None:
    # What only the cloud shows: the OCR image builds for arm64, starts, finds its models and
    # reads pages there; and Convert, OCR map and Convert again run as the state machine says.
    s3 = session.client("s3")
    doc_id = doc_id_for(f"{stack.bucket}/{scan_key}")
    registry, executions = Registry(session, stack), Executions(session, stack, scan_key)
    scan = scanned_copy(PDF.read_bytes(), pages=[0, 1])  # two pages, images only
    started = now()

    log.info("OCR: upload a 2-page scan as s3://%s/%s and wait for INDEXED", stack.bucket, scan_key)
    s3.put_object(Bucket=stack.bucket, Key=scan_key, Body=scan, ContentType="application/pdf")
    item = wait_indexed(registry, executions, doc_id, version_of(scan), since=started)

    assert (int(item["pages"]), int(item["pages_ocr"])) == (2, 2), item
    page = api.get(f"documents/{doc_id}/pages/1")
    assert page.status_code == 200, page.text[:300]
    shown = page.json()
    assert shown["ocr"] is True
    # Most words of the page's own text layer come back (OCR may miss a few)
    words = set(re.findall(r"[a-z]{4,}", page_texts(PDF.read_bytes())[0].casefold()))
    read = set(re.findall(r"[a-z]{4,}", shown["text"].casefold()))
    assert len(words & read) >= 0.8 * len(words), f"missed {sorted(words - read)[:40]}"


@pytest.fixture
def notes_key(stack: Stack, session: Any, run_id: str) -> Iterator[str]:
    key = f"docchat-e2e/{run_id}/noted-{PDF.name}"
    yield key
    leave_no_trace(session, stack, key, doc_id_for(f"{stack.bucket}/{key}"))


def test_stack_writes_a_note_for_each_chunk_with_chunk_context_model(
    stack: Stack, session: Any, notes_key: str
) -> None:
    # What only the cloud shows: the Chunk function reaches ChatModelId on Bedrock with its own
    # role (inference profile, foundation model, the anthropic package in its zip) and keeps
    # one note per chunk in the artifacts bucket, deleted with the document.
    if stack.chunk_context != "model":
        pytest.skip(
            f"stack {stack.name} has ChunkContext={stack.chunk_context}: deploy with "
            "ChunkContext=model to check model-written chunk notes"
        )
    s3 = session.client("s3")
    artifacts = session.client("cloudformation").describe_stack_resource(
        StackName=stack.name, LogicalResourceId="ArtifactsBucket"
    )["StackResourceDetail"]["PhysicalResourceId"]
    doc_id = doc_id_for(f"{stack.bucket}/{notes_key}")
    registry, executions = Registry(session, stack), Executions(session, stack, notes_key)
    data = PDF.read_bytes()
    started = now()

    log.info("notes: upload s3://%s/%s and wait for INDEXED", stack.bucket, notes_key)
    s3.put_object(Bucket=stack.bucket, Key=notes_key, Body=data, ContentType="application/pdf")
    item = wait_indexed(registry, executions, doc_id, version_of(data), since=started)

    stored = s3.get_object(Bucket=artifacts, Key=f"notes/{doc_id}.json")["Body"].read()
    notes = list(json.loads(stored).values())
    assert len(notes) == int(item["chunks"]), (len(notes), item["chunks"])
    assert all(note.strip() and "\n" not in note for note in notes), notes[:3]

    log.info("notes: delete the document; its notes must go")
    since = now()
    s3.delete_object(Bucket=stack.bucket, Key=notes_key)
    wait_removed(registry, executions, doc_id, since=since)
    listed = s3.list_objects_v2(Bucket=artifacts, Prefix=f"notes/{doc_id}.json")
    assert listed.get("KeyCount", 0) == 0


def test_stack_serves_mcp_to_a_signed_in_user(stack: Stack, api: ChatApi) -> None:
    # The official MCP client over streamable HTTP at the stack's /mcp, signed in as the rest of
    # the API is (issue #32). SigV4 signs each request's body, which the SDK's client cannot.
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    if stack.auth == "IAM":
        pytest.skip("ApiAuth=IAM: MCP clients cannot sign SigV4; COGNITO or NONE stacks serve it")
    url = stack.url("mcp")

    async def session() -> tuple[list[str], Any]:
        headers = api.auth.headers("POST", url, b"")
        async with (
            httpx.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            tools = [tool.name for tool in (await client.list_tools()).tools]
            return tools, await client.call_tool("list_documents", {})

    tools, listed = anyio.run(session)

    assert tools == ["search", "read_pages", "list_documents", "ask"]
    assert not listed.is_error, listed.content
    assert isinstance(listed.structured_content["documents"], list)
    if stack.auth == "COGNITO":
        unsigned = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert unsigned.status_code in (401, 403), unsigned.text[:300]
        metadata = httpx.get(stack.url(".well-known/oauth-protected-resource"), timeout=30)
        assert metadata.status_code == 200, metadata.text[:300]
        assert metadata.json()["resource"] == url
        [issuer] = metadata.json()["authorization_servers"]
        assert issuer.startswith("https://cognito-idp.")


#: How long CloudWatch takes to turn a log line in the embedded metric format into a metric:
#: usually a minute or two.
METRICS_TIMEOUT_S = 600


def test_stack_writes_each_answers_usage_as_cloudwatch_metrics(
    stack: Stack, session: Any, api: ChatApi
) -> None:
    # Given an answer, and the tokens its `done` event says it used
    asked = now()
    reply = api.ask("Which documents are there?")
    assert reply.done is not None
    used = reply.done["usage"]
    log.info("an answer used %s; waiting for its metrics in namespace docchat", used)

    # Then the chat function's log turns it into metrics per user and collection
    cloudwatch = session.client("cloudwatch")
    started = time.monotonic()
    while True:
        listed = cloudwatch.list_metrics(
            Namespace="docchat", MetricName="InputTokens", RecentlyActive="PT3H"
        )["Metrics"]
        sums = [
            sum(
                p["Sum"]
                for p in cloudwatch.get_metric_statistics(
                    Namespace="docchat",
                    MetricName="InputTokens",
                    Dimensions=m["Dimensions"],
                    StartTime=asked - timedelta(minutes=1),
                    EndTime=now() + timedelta(minutes=1),
                    Period=60,
                    Statistics=["Sum"],
                )["Datapoints"]
            )
            for m in listed
            if {d["Name"] for d in m["Dimensions"]} == {"service", "user", "collection"}
        ]
        if used["input_tokens"] == 0 or sum(sums) >= used["input_tokens"]:
            break
        if time.monotonic() - started > METRICS_TIMEOUT_S:
            raise AssertionError(
                f"no InputTokens metric of {used['input_tokens']} tokens in namespace docchat "
                f"after {METRICS_TIMEOUT_S} s (found {len(listed)} metrics, sums {sums})"
            )
        time.sleep(20)
