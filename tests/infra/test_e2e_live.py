"""The post-deploy check's AWS side, offline: moto for Cognito, S3 and DynamoDB, botocore's
Stubber for Step Functions, a fixed clock for SigV4."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from tests.e2e import live
from tests.e2e.check import ChatReply, IngestFailedError, Stack, stale_passages
from tests.e2e.live import Executions, SigV4, TokenAuth, cognito_user, leave_no_trace

REGION = "eu-west-1"
KEY = "docchat-e2e/run-1/dmca.pdf"


def _stack(**fields: str) -> Stack:
    values = {
        "name": "docchat",
        "bucket": "docchat-documents",
        "table": "docchat-documents-table",
        "api_url": "https://a1b2c3.execute-api.eu-west-1.amazonaws.com/v1/",
        "state_machine_arn": f"arn:aws:states:{REGION}:123456789012:stateMachine:Ingest",
        "auth": "COGNITO",
    }
    return Stack(**(values | fields))


@pytest.fixture
def session(dummy_aws: None) -> Iterator[Any]:
    with mock_aws():
        yield boto3.Session(region_name=REGION)


# --- Cognito ------------------------------------------------------------------------------------


@pytest.fixture
def pool(session: Any) -> Stack:
    """A pool like the template's: email as the user name, 12-character passwords."""
    idp = session.client("cognito-idp")
    pool_id = idp.create_user_pool(
        PoolName="docchat-users",
        UsernameAttributes=["email"],
        Policies={"PasswordPolicy": {"MinimumLength": 12}},
    )["UserPool"]["Id"]
    client_id = idp.create_user_pool_client(
        UserPoolId=pool_id,
        ClientName="page",
        ExplicitAuthFlows=["ALLOW_ADMIN_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"],
    )["UserPoolClient"]["ClientId"]
    return _stack(user_pool_id=pool_id, client_id=client_id)


def _users(session: Any, stack: Stack) -> list[str]:
    users = session.client("cognito-idp").list_users(UserPoolId=stack.user_pool_id)["Users"]
    return [u["Username"] for u in users]


def test_cognito_user_signs_in_with_an_id_token_then_is_deleted(session: Any, pool: Stack) -> None:
    with cognito_user(session, pool, "run-1") as sign_in:
        token = sign_in()
        assert len(_users(session, pool)) == 1

    assert token.count(".") == 2  # a JWT: header.payload.signature
    assert _users(session, pool) == []


def test_cognito_user_is_deleted_when_the_check_fails(session: Any, pool: Stack) -> None:
    with pytest.raises(RuntimeError, match="step 3 failed"), cognito_user(session, pool, "run-2"):
        raise RuntimeError("step 3 failed")

    assert _users(session, pool) == []


def test_cognito_user_says_which_flow_the_app_client_lacks() -> None:
    idp = boto3.client(
        "cognito-idp", region_name=REGION, aws_access_key_id="a", aws_secret_access_key="b"
    )
    stack = _stack(user_pool_id=f"{REGION}_AbC", client_id="4abc")
    stubber = Stubber(idp)
    stubber.add_response("admin_create_user", {})
    stubber.add_response("admin_set_user_password", {})
    # What Cognito answers when the flow is not in the client's ExplicitAuthFlows.
    stubber.add_client_error(
        "admin_initiate_auth", "InvalidParameterException", "Auth flow not enabled for this client"
    )
    stubber.add_response("admin_delete_user", {})

    class Session:
        def client(self, name: str) -> Any:
            return idp

    with (
        stubber,
        pytest.raises(AssertionError, match="4abc needs ALLOW_ADMIN_USER_PASSWORD_AUTH"),
        cognito_user(Session(), stack, "run-3") as sign_in,
    ):
        sign_in()
    stubber.assert_no_pending_responses()  # the user was deleted all the same


def test_token_auth_signs_in_once_and_again_when_the_token_ages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tokens = iter(["first", "second"])
    auth = TokenAuth(lambda: next(tokens))

    assert auth.headers("GET", "u", b"") == {"Authorization": "first"}
    assert auth.headers("POST", "u", b"{}") == {"Authorization": "first"}
    monkeypatch.setattr(live, "TOKEN_LIFETIME_S", -1)
    assert auth.headers("GET", "u", b"") == {"Authorization": "second"}


# --- IAM ----------------------------------------------------------------------------------------


def test_sigv4_signs_the_body_for_execute_api_in_the_callers_region() -> None:
    session = boto3.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name=REGION
    )
    url = _stack().url("chat")

    headers = SigV4(session).headers("POST", url, b'{"messages": []}')
    other = SigV4(session).headers("POST", url, b'{"messages": [1]}')

    credential, signed, signature = headers["Authorization"].split(", ")
    assert credential.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert credential.endswith(f"/{REGION}/execute-api/aws4_request")
    assert signed == "SignedHeaders=content-type;host;x-amz-date"
    assert headers["Content-Type"] == "application/json"
    assert other["Authorization"].split(", ")[2] != signature  # the body is signed


# --- the bucket ---------------------------------------------------------------------------------


def test_leave_no_trace_removes_every_version_and_marker_of_the_key_only(session: Any) -> None:
    stack = _stack()
    s3 = session.client("s3")
    s3.create_bucket(Bucket=stack.bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket=stack.bucket, VersioningConfiguration={"Status": "Enabled"})
    session.client("dynamodb").create_table(
        TableName=stack.table,
        KeySchema=[{"AttributeName": "doc_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "doc_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for body in (b"one", b"two", b"three"):
        s3.put_object(Bucket=stack.bucket, Key=KEY, Body=body)
    s3.delete_object(Bucket=stack.bucket, Key=KEY)
    s3.put_object(Bucket=stack.bucket, Key=KEY, Body=b"four")  # current again
    s3.put_object(Bucket=stack.bucket, Key=KEY + ".keep", Body=b"someone else's")

    leave_no_trace(session, stack, KEY, "dmca-1a2b3c4d")

    left = s3.list_object_versions(Bucket=stack.bucket, Prefix="docchat-e2e/")
    remaining = [v["Key"] for v in left.get("Versions", []) + left.get("DeleteMarkers", [])]
    assert remaining == [KEY + ".keep"]


# --- waiting on the registry --------------------------------------------------------------------


class _Registry:
    def __init__(self, *items: dict[str, Any] | None) -> None:
        self.items = list(items)

    def item(self, doc_id: str) -> dict[str, Any] | None:
        return self.items.pop(0) if len(self.items) > 1 else self.items[0]


class _Executions:
    def summary(self, *, since: datetime) -> str:
        return "run-7: FAILED"


@pytest.fixture
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "POLL_S", 0)
    monkeypatch.setattr("tests.e2e.live.time.sleep", lambda _s: None)


def _wait(registry: _Registry) -> dict[str, Any]:
    return live.wait_indexed(
        registry,  # type: ignore[arg-type]
        _Executions(),  # type: ignore[arg-type]
        "dmca-1",
        "v2",
        since=datetime.now(UTC),
    )


def test_wait_indexed_returns_the_item_once_this_version_is_indexed(no_waiting: None) -> None:
    old = {"doc_id": "dmca-1", "version": "v1", "status": "INDEXED"}
    registry = _Registry(
        None, old, {**old, "version": "v2", "status": "EMBEDDING"}, {**old, "version": "v2"}
    )

    assert _wait(registry)["version"] == "v2"


def test_wait_indexed_fails_with_the_registry_reason(no_waiting: None) -> None:
    failed = {"doc_id": "dmca-1", "version": "v2", "status": "FAILED", "error": "it is encrypted"}

    with pytest.raises(IngestFailedError, match="it is encrypted"):
        _wait(_Registry(failed))


def test_wait_indexed_gives_up_with_what_it_saw(
    no_waiting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "INGEST_TIMEOUT_S", -1)

    with pytest.raises(AssertionError, match=r"no registry item yet; executions: run-7: FAILED"):
        _wait(_Registry(None))


# --- the pipeline's executions ------------------------------------------------------------------


def _run(name: str, status: str, started: datetime) -> dict[str, Any]:
    """A ListExecutions item: https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html"""
    return {
        "executionArn": f"arn:aws:states:{REGION}:123456789012:execution:Ingest:{name}",
        "stateMachineArn": _stack().state_machine_arn,
        "name": name,
        "status": status,
        "startDate": started,
    }


def test_executions_settle_waits_for_the_new_run_about_the_key(no_waiting: None) -> None:
    since = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    before = _run("before", "SUCCEEDED", since - timedelta(seconds=30))
    other = _run("other-key", "RUNNING", since + timedelta(seconds=5))
    running = _run("remove", "RUNNING", since + timedelta(seconds=3))
    ancient = _run("ancient", "SUCCEEDED", since - timedelta(hours=1))
    executions = Executions(
        boto3.Session(region_name=REGION, aws_access_key_id="a", aws_secret_access_key="b"),
        _stack(),
        KEY,
    )
    inputs = {
        "before": KEY,
        "other-key": "docchat-e2e/run-2/x.pdf",
        "remove": KEY,
    }
    stubber = Stubber(executions._sfn)
    for status in ("RUNNING", "SUCCEEDED"):
        runs = [other, {**running, "status": status}, before, ancient]
        stubber.add_response(
            "list_executions", {"executions": runs}, {"stateMachineArn": _stack().state_machine_arn}
        )
        for run in runs[:3]:
            if status == "RUNNING":  # inputs are read once per run
                event = {"detail": {"object": {"key": inputs[run["name"]]}}}
                stubber.add_response(
                    "describe_execution",
                    {**run, "input": json.dumps(event)},
                    {"executionArn": run["executionArn"]},
                )

    with stubber:
        settled = executions.settle(since=since, known={before["executionArn"]})

    assert [(r["name"], r["status"]) for r in settled] == [("remove", "SUCCEEDED")]
    stubber.assert_no_pending_responses()


def test_executions_settle_accepts_that_no_run_starts(
    no_waiting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "SETTLE_S", -1)
    executions = Executions(
        boto3.Session(region_name=REGION, aws_access_key_id="a", aws_secret_access_key="b"),
        _stack(),
        KEY,
    )
    stubber = Stubber(executions._sfn)
    stubber.add_response(
        "list_executions", {"executions": []}, {"stateMachineArn": _stack().state_machine_arn}
    )

    with stubber:
        assert executions.settle(since=datetime.now(UTC), known=set()) == []


# --- asking until new chunks are searchable -----------------------------------------------------


class _Api:
    def __init__(self, *replies: ChatReply) -> None:
        self.replies = list(replies)
        self.asked = 0

    def ask(self, question: str, *, doc_ids: list[str] | None = None) -> ChatReply:
        self.asked += 1
        return self.replies.pop(0)


def _reply(*chunk_ids: str) -> ChatReply:
    passages = [{"chunk_id": c, "doc_id": "d"} for c in chunk_ids]
    return ChatReply(events=[], passages=passages)


def _never_stale(reply: ChatReply) -> None:
    assert not stale_passages(reply.passages_of("d"), "new-version")


def test_ask_until_asks_again_until_the_chunks_are_searchable(no_waiting: None) -> None:
    api = _Api(_reply(), _reply(), _reply("d:new-version:00000"))

    reply = live.ask_until(
        api,  # type: ignore[arg-type]
        "q",
        doc_ids=["d"],
        ready=lambda r: bool(r.passages_of("d")),
        check=_never_stale,
        what="passages",
    )

    assert (api.asked, reply.passages[0]["chunk_id"]) == (3, "d:new-version:00000")


def test_ask_until_fails_at_once_on_what_must_never_be_seen(no_waiting: None) -> None:
    api = _Api(_reply("d:old-version:00003"), _reply("d:new-version:00000"))

    with pytest.raises(AssertionError):
        live.ask_until(
            api,  # type: ignore[arg-type]
            "q",
            doc_ids=["d"],
            ready=lambda r: bool(r.passages_of("d")),
            check=_never_stale,
            what="passages",
        )
    assert api.asked == 1


def test_ask_until_gives_up_with_the_last_answer(
    no_waiting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "VISIBLE_TIMEOUT_S", -1)

    with pytest.raises(AssertionError, match=r"passages after .* 0 passages"):
        live.ask_until(
            _Api(_reply()),  # type: ignore[arg-type]
            "q",
            doc_ids=None,
            ready=lambda r: bool(r.passages),
            check=lambda r: None,
            what="passages",
        )
