"""`make e2e` without an AWS account, and the post-deploy check's own logic, offline."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docchat.cli import main as docchat
from docchat.config import Settings
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.decision import version_of
from docchat.models import Page
from docchat.serve.app import create_app
from docchat.wiring.local import local_backend
from tests.chatkit import ServedApp
from tests.conftest import EXAMPLES, REPO
from tests.e2e.check import (
    NEEDS,
    IngestFailedError,
    Stack,
    StackError,
    changed_pdf,
    chat_reply,
    chunk_version,
    duplicate_passages,
    ingest_outcome,
    misplaced_quotes,
    missing_prerequisites,
    page_texts,
    sse_events,
    stack_from_description,
    stale_passages,
    unstreamed,
)
from tests.e2e.live import Auth, ChatApi

DMCA = EXAMPLES / "dmca.pdf"
QUESTION = "What does the DMCA say about circumvention of technological protection measures?"


# --- make e2e without what it needs -------------------------------------------------------------


def _clean_env(home: Path, **extra: str) -> dict[str, str]:
    """Only PATH, an empty HOME and no AWS configuration; instance metadata off, so that the
    credential chain does not look beyond this machine."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "AWS_CONFIG_FILE": str(home / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        **extra,
    }


def _make_e2e(env: dict[str, str], *args: str, stamp: Path) -> subprocess.CompletedProcess[str]:
    # STAMP names an up-to-date stand-in for .venv/.installed: the suite already runs in the
    # installed .venv, and a pyproject.toml edited since must not make this test reinstall it.
    stamp.touch()
    return subprocess.run(
        ["make", "--no-print-directory", "e2e", f"STAMP={stamp}", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_make_e2e_without_stack_prints_one_line_and_succeeds(tmp_path: Path) -> None:
    done = _make_e2e(_clean_env(tmp_path), stamp=tmp_path / "stamp")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"{NEEDS}: no STACK given, skipped (e.g. make e2e STACK=docchat AWS_PROFILE=dev)"
    ]


def test_make_e2e_without_credentials_prints_one_line_and_succeeds(tmp_path: Path) -> None:
    env = _clean_env(tmp_path, AWS_REGION="eu-west-1")

    done = _make_e2e(env, "STACK=docchat", stamp=tmp_path / "stamp")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [f"{NEEDS}: no AWS credentials found, skipped"]


def test_make_e2e_with_credentials_but_no_region_says_so(tmp_path: Path) -> None:
    env = _clean_env(tmp_path, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")

    done = _make_e2e(env, "STACK=docchat", stamp=tmp_path / "stamp")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [f"{NEEDS}: no region (AWS_REGION) found, skipped"]


def test_make_e2e_with_a_missing_profile_says_why_in_one_line(tmp_path: Path) -> None:
    env = _clean_env(tmp_path, AWS_PROFILE="nobody", AWS_REGION="eu-west-1")

    done = _make_e2e(env, "STACK=docchat", stamp=tmp_path / "stamp")

    assert (done.returncode, done.stderr) == (0, "")
    [line] = done.stdout.splitlines()
    assert line.startswith(f"{NEEDS}: no AWS credentials found (")
    assert "nobody" in line


@pytest.fixture
def moto_server() -> Iterator[str]:
    """AWS APIs as moto serves them on loopback: where the check finds no stack."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _checks(*names: str) -> int:
    return sum((REPO / "tests" / "e2e" / name).read_text().count("\ndef test_") for name in names)


# The checks in tests/e2e that need a Microsoft tenant, a Confluence site or a Google Drive rather
# than a stack: skipped without one.
TENANT_CHECKS = _checks("test_sharepoint.py", "test_confluence.py", "test_gdrive.py")
# Every other check needs the stack: each is skipped without one, and fails without it.
STACK_CHECKS = _checks(*(p.name for p in REPO.glob("tests/e2e/test_*.py"))) - TENANT_CHECKS


def test_make_e2e_with_credentials_runs_the_checks_against_the_named_stack(
    tmp_path: Path, moto_server: str
) -> None:
    # Given credentials and a region, but an endpoint (moto on loopback) without that stack
    env = _clean_env(
        tmp_path,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_REGION="eu-west-1",
        AWS_ENDPOINT_URL=moto_server,
    )

    done = _make_e2e(env, "STACK=docchat-absent", stamp=tmp_path / "stamp")

    # Then the tests run (not skip) and fail on the stack, saying what to check
    assert done.returncode == 2, done.stdout[-3000:]  # make's status for a failed recipe
    assert "no stack 'docchat-absent' in eu-west-1: check STACK and AWS_REGION" in done.stdout
    last = done.stdout.splitlines()[-1]
    assert f"{STACK_CHECKS} errors" in last
    assert ("skipped" not in last) if not TENANT_CHECKS else (f"{TENANT_CHECKS} skipped" in last)


def test_e2e_tests_collect_and_skip_without_a_stack(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DOCCHAT_E2E_STACK"}

    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "pytest", "tests/e2e", "-q", "-rs"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{STACK_CHECKS + TENANT_CHECKS} skipped" in done.stdout
    assert done.stdout.count("needs a deployed stack: make e2e STACK=<name>") == STACK_CHECKS


# --- what the check reads from a stack ----------------------------------------------------------


def _description(*, auth: str = "COGNITO", status: str = "CREATE_COMPLETE") -> dict[str, Any]:
    """A DescribeStacks response, in the shape its API reference gives:
    https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html"""
    outputs = {
        "DocumentsBucketName": "docchat-documentsbucket-1x2y3z",
        "DocumentsTableName": "docchat-DocumentsTable-ABC",
        "ChatApiUrl": "https://a1b2c3.execute-api.eu-west-1.amazonaws.com/v1/",
        "IngestStateMachineArn": "arn:aws:states:eu-west-1:111122223333:stateMachine:Ingest",
        "CollectionEndpoint": "https://abc.eu-west-1.aoss.amazonaws.com",
    }
    if auth == "COGNITO":
        outputs |= {"ChatUserPoolId": "eu-west-1_AbC", "ChatUserPoolClientId": "4abc"}
    return {
        "Stacks": [
            {
                "StackName": "docchat",
                "StackStatus": status,
                "Parameters": [
                    {"ParameterKey": "ApiAuth", "ParameterValue": auth},
                    {"ParameterKey": "ChunkSize", "ParameterValue": "1000"},
                ],
                "Outputs": [
                    {"OutputKey": k, "OutputValue": v, "Description": "..."}
                    for k, v in outputs.items()
                ],
            }
        ]
    }


def test_stack_from_description_reads_outputs_and_auth() -> None:
    stack = stack_from_description("docchat", _description())

    assert stack == Stack(
        name="docchat",
        bucket="docchat-documentsbucket-1x2y3z",
        table="docchat-DocumentsTable-ABC",
        api_url="https://a1b2c3.execute-api.eu-west-1.amazonaws.com/v1/",
        state_machine_arn="arn:aws:states:eu-west-1:111122223333:stateMachine:Ingest",
        auth="COGNITO",
        user_pool_id="eu-west-1_AbC",
        client_id="4abc",
    )
    assert stack.url("chat") == "https://a1b2c3.execute-api.eu-west-1.amazonaws.com/v1/chat"


def test_stack_url_joins_paths_with_or_without_a_trailing_slash() -> None:
    stack = stack_from_description("docchat", _description(auth="IAM"))
    bare = Stack(**{**stack.__dict__, "api_url": stack.api_url.rstrip("/")})

    assert stack.url("documents/x") == bare.url("/documents/x") == stack.api_url + "documents/x"
    assert (stack.auth, stack.user_pool_id) == ("IAM", "")


def test_stack_from_description_names_what_is_missing() -> None:
    description = _description()
    outputs = description["Stacks"][0]["Outputs"]
    description["Stacks"][0]["Outputs"] = [
        o for o in outputs if o["OutputKey"] not in ("ChatApiUrl", "ChatUserPoolClientId")
    ]

    with pytest.raises(StackError, match="lacks the outputs ChatApiUrl, ChatUserPoolClientId"):
        stack_from_description("docchat", description)


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ({"Stacks": []}, "stack 'docchat' not found"),
        (_description(status="ROLLBACK_COMPLETE"), "is ROLLBACK_COMPLETE: deploy it"),
        (_description(auth="OPEN"), "ApiAuth='OPEN'"),
    ],
)
def test_stack_from_description_refuses_unusable_stacks(
    description: dict[str, Any], message: str
) -> None:
    with pytest.raises(StackError, match=message):
        stack_from_description("docchat", description)


def test_missing_prerequisites_is_none_when_all_are_there() -> None:
    assert missing_prerequisites(stack="docchat", credentials=True, region="eu-west-1") is None
    assert missing_prerequisites(stack="docchat", credentials=False, region=None) == (
        f"{NEEDS}: no AWS credentials and no region (AWS_REGION) found, skipped"
    )


# --- the chat stream ----------------------------------------------------------------------------


def test_sse_events_follow_the_event_stream_format() -> None:
    lines = [
        ": a comment",
        "event: status",
        'data: {"stage": "started"}',
        "",
        "event: delta\r",
        "data:first",
        "data:  second",
        "id: 7",
        "",
        "event: lonely",  # no data: not dispatched
        "",
        "data: unnamed",
        "",
        "event: done",
        "data: {}",  # the stream ends without a blank line
    ]

    events = [(e.type, e.data) for e in sse_events(lines)]

    assert events == [
        ("status", '{"stage": "started"}'),
        ("delta", "first\n second"),
        ("message", "unnamed"),
        ("done", "{}"),
    ]


def test_chat_reply_collects_answer_passages_citations_and_end() -> None:
    stream = [
        "event: status\ndata: {}\n",
        'event: tool_call\ndata: {"id": "t1", "name": "search_documents", "input": {}}\n',
        'event: sources\ndata: {"passages": [{"chunk_id": "d:abc:00000", "doc_id": "d"}]}\n',
        'event: delta\ndata: {"text": "Yes "}\n',
        'event: delta\ndata: {"text": "[1]."}\n',
        'event: citations\ndata: {"citations": [{"doc_id": "d", "page": 2, "quote": "q"}]}\n',
        'event: done\ndata: {"usage": {}}\n',
    ]
    lines = [line for event in stream for line in (event + "\n").splitlines()]

    reply = chat_reply(sse_events(lines))

    assert reply.answer == "Yes [1]."
    assert reply.searched()
    assert not chat_reply(sse_events(lines[:3] + lines[6:])).searched()
    assert [p["chunk_id"] for p in reply.passages_of("d")] == ["d:abc:00000"]
    assert reply.citations_of("d") == [{"doc_id": "d", "page": 2, "quote": "q"}]
    assert reply.citations_of("other") == []
    assert (reply.done, reply.error) == ({"usage": {}}, None)


# --- what the answers must show -----------------------------------------------------------------


def test_misplaced_quotes_finds_quotes_off_their_page() -> None:
    pages = [
        "The bridge  re-\nopens on Monday. The works that 2\r\nclosed it",
        "cost four million.",
    ]
    citations = [
        {"page": 1, "quote": "The bridge reopens on Monday."},
        {"page": 2, "quote": "the bridge reopens"},
        {"page": 3, "quote": "Repairs cost"},
        {"page": 2, "quote": "  "},
        # a sentence going on to the next page, cited to both; a footnote mark left out
        {"page": 1, "page_end": 2, "quote": "The works that closed it cost four million."},
        {"page": 1, "quote": "The works that closed it cost four million."},
    ]

    assert misplaced_quotes(citations, pages) == [
        "p. 2: 'the bridge reopens'",
        "p. 3: 'Repairs cost'",
        "p. 2: '  '",
        "p. 1: 'The works that closed it cost four million.'",
    ]


def test_chunk_version_reads_the_version_chunk_py_writes() -> None:
    version = version_of(b"%PDF- one version")
    pages = [Page(number=1, markdown="# Title\n\nSome words on a page.", chars=24)]

    [chunk] = chunks_from_pages(
        pages,
        doc_id="doc-1a2b3c4d",
        version=version,
        source="b/k.pdf",
        title="k",
        chunk_size=1500,
        chunk_overlap=200,
    )

    assert version.startswith(chunk_version(chunk.chunk_id))
    assert stale_passages([chunk.model_dump()], version) == []
    assert stale_passages([chunk.model_dump()], version_of(b"other")) == [chunk.chunk_id]


def test_duplicate_passages_spots_the_same_text_under_another_id() -> None:
    passage = {"chunk_id": "d:aaa:00001", "text": "Same text.", "page_start": 3, "page_end": 3}
    again = {**passage, "chunk_id": "d:bbb:00001", "text": "same  text"}
    elsewhere = {**passage, "chunk_id": "d:aaa:00002", "page_start": 4, "page_end": 4}

    assert duplicate_passages([passage, passage, elsewhere]) == []
    assert duplicate_passages([passage, elsewhere, again]) == ["d:bbb:00001"]


def test_changed_pdf_is_a_new_version_with_the_same_pages() -> None:
    data = DMCA.read_bytes()

    changed = changed_pdf(data, "run-1")

    assert version_of(changed) != version_of(data)
    assert page_texts(changed) == page_texts(data)


def test_ingest_outcome_waits_for_the_version_and_reports_failures() -> None:
    item = {"doc_id": "d", "version": "v2", "status": "EMBEDDING"}

    assert ingest_outcome(None, "v2") is None
    assert ingest_outcome({**item, "version": "v1", "status": "INDEXED"}, "v2") is None
    assert ingest_outcome(item, "v2") is None
    assert ingest_outcome({**item, "status": "INDEXED"}, "v2") == "INDEXED"
    failed = {**item, "status": "FAILED", "error_code": "encrypted_pdf", "error": "upload it open"}
    with pytest.raises(IngestFailedError, match=r"d FAILED \(encrypted_pdf\): upload it open"):
        ingest_outcome(failed, "v2")


def test_unstreamed_spots_an_answer_that_arrived_in_one_piece() -> None:
    # Lines as they come: streamed (spread over the answer), buffered (all at the end), quick.
    streamed = [0.4, 0.5, 1.2, 2.0, 3.1, 4.8, 6.0]
    buffered = [5.9, 5.9, 5.9, 6.0, 6.0]
    assert unstreamed(streamed) is None
    assert unstreamed([0.2, 0.3, 0.5]) is None  # too quick to tell
    found = unstreamed(buffered)
    assert found is not None and "in one piece" in found and "after 5.9 s" in found


# --- the check's API client against the real app on loopback -----------------------------------


@pytest.mark.slow
def test_chat_api_client_asks_the_served_app_and_checks_quotes_and_versions(
    tmp_path: Path,
) -> None:
    # Given the real app over a local library holding dmca.pdf, served on 127.0.0.1
    data, pdf = tmp_path / "data", tmp_path / "dmca.pdf"
    shutil.copy(DMCA, pdf)
    assert docchat(["ingest", str(pdf), "--data-dir", str(data)]) == 0
    settings = Settings.from_env({}, data_dir=data)
    served = ServedApp(create_app(lambda: local_backend(settings)))
    served.start()
    try:
        stack = Stack(
            name="local",
            bucket="-",
            table="-",
            api_url=f"http://127.0.0.1:{served.port}/",
            state_machine_arn="-",
            auth="NONE",
        )
        api = ChatApi(stack, Auth())
        [document] = api.documents()

        # When the check asks through the stream
        reply = api.ask(QUESTION, doc_ids=[document["doc_id"]])

        # Then it reads cited quotes that are on their pages, from this version only
        cited = reply.citations_of(document["doc_id"])
        assert cited
        assert misplaced_quotes(cited, page_texts(DMCA.read_bytes())) == []
        passages = reply.passages_of(document["doc_id"])
        assert passages
        assert stale_passages(passages, version_of(DMCA.read_bytes())) == []
        assert stale_passages(passages, version_of(b"another version")) == [
            p["chunk_id"] for p in passages
        ]
        assert duplicate_passages(passages) == []
        assert api.get(f"documents/{document['doc_id']}x").status_code == 404
    finally:
        served.stop()
