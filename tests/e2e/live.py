"""The parts of the post-deploy check that talk to AWS: the chat API as a caller reaches it
(Cognito token, SigV4 or nothing), the registry, the pipeline's executions and the bucket."""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from tests.e2e.check import (
    ChatReply,
    Stack,
    chat_reply,
    describe_item,
    ingest_outcome,
    sse_events,
    unstreamed,
)

log = logging.getLogger("docchat.e2e")
POLL_S = 5.0
# Ingestion of a small PDF takes a minute or two; a cold OpenSearch Serverless collection or a
# Bedrock throttle can add minutes. Bounded, with the last state in the message.
INGEST_TIMEOUT_S = 15 * 60
# OpenSearch Serverless makes writes searchable only after a delay (no refresh).
VISIBLE_TIMEOUT_S = 3 * 60
REMOVE_TIMEOUT_S = 5 * 60
# How long an S3 event may take to start an execution before we conclude none will start.
SETTLE_S = 90
LISTED_TIMEOUT_S = 30
TOKEN_LIFETIME_S = 45 * 60  # Cognito ID tokens live an hour by default; sign in again before


def caller_session() -> Any:
    """A boto3 session with the caller's credentials. botocore reads AWS_DEFAULT_REGION (or the
    profile's region); AWS_REGION, which the AWS CLI v2 and docchat read, wins when set."""
    import boto3

    return boto3.Session(region_name=os.environ.get("AWS_REGION") or None)


class Auth:
    """No credentials: for ApiAuth=NONE, and to check that the API refuses anonymous calls."""

    def headers(self, method: str, url: str, body: bytes) -> dict[str, str]:
        return {}


class TokenAuth(Auth):
    """A Cognito ID token in `Authorization`, what the user pool authorizer reads:
    https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-integrate-with-cognito.html
    """

    def __init__(self, sign_in: Callable[[], str]) -> None:
        self._sign_in = sign_in
        self._token = ""
        self._at = 0.0

    def headers(self, method: str, url: str, body: bytes) -> dict[str, str]:
        if not self._token or time.monotonic() - self._at > TOKEN_LIFETIME_S:
            self._token, self._at = self._sign_in(), time.monotonic()
        return {"Authorization": self._token}


class SigV4(Auth):
    """The caller's credentials, signed for execute-api (what ApiAuth=IAM checks):
    https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html
    """

    def __init__(self, session: Any) -> None:
        self._session = session

    def headers(self, method: str, url: str, body: bytes) -> dict[str, str]:
        request = AWSRequest(
            method=method, url=url, data=body, headers={"Content-Type": "application/json"}
        )
        credentials = self._session.get_credentials().get_frozen_credentials()
        SigV4Auth(credentials, "execute-api", self._session.region_name).add_auth(request)
        return dict(request.headers.items())


class ChatApi:
    """The deployed chat API at the stack's ChatApiUrl."""

    def __init__(self, stack: Stack, auth: Auth) -> None:
        self.stack = stack
        self.auth = auth

    def get(self, path: str) -> httpx.Response:
        return self.call("GET", path)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        url = self.stack.url(path)
        data = json.dumps(body).encode() if body is not None else b""
        headers = self.auth.headers(method, url, data)
        if body is not None:
            headers["Content-Type"] = "application/json"
        return httpx.request(method, url, content=data, headers=headers, timeout=60)

    def documents(self) -> list[dict[str, Any]]:
        response = self.get("documents")
        _expect_ok(response, "GET documents")
        documents: list[dict[str, Any]] = response.json()["documents"]
        return documents

    def ask(
        self,
        question: str,
        *,
        doc_ids: list[str] | None = None,
        conversation_id: str | None = None,
    ) -> ChatReply:
        """POST /chat (the question and answer saved in `conversation_id` when given), read to
        the end of its event stream."""
        url = self.stack.url("chat")
        request: dict[str, Any] = {"messages": [{"role": "user", "content": question}]}
        if doc_ids is not None:
            request["doc_ids"] = doc_ids
        if conversation_id is not None:
            request["conversation_id"] = conversation_id
        body = json.dumps(request).encode()
        headers = {"Content-Type": "application/json", **self.auth.headers("POST", url, body)}
        # The stage keeps a stream open for up to 5 minutes (REGIONAL endpoint).
        timeout = httpx.Timeout(60, read=300)
        started = time.monotonic()
        arrivals: list[float] = []

        def timed(lines: Iterator[str]) -> Iterator[str]:
            for line in lines:
                arrivals.append(time.monotonic() - started)
                yield line

        with httpx.stream("POST", url, content=body, headers=headers, timeout=timeout) as response:
            if response.status_code != 200:
                response.read()
                _expect_ok(response, "POST chat")
            reply = chat_reply(sse_events(timed(response.iter_lines())))
        buffered = unstreamed(arrivals)
        if buffered:
            raise AssertionError(buffered)
        if reply.error is not None:
            raise AssertionError(f"the chat stream ended with an error: {reply.error}")
        if reply.done is None:
            raise AssertionError(
                f"the chat stream ended without a `done` event after {len(reply.events)} events"
            )
        return reply


def _expect_ok(response: httpx.Response, what: str) -> None:
    if response.status_code != 200:
        raise AssertionError(f"{what} answered {response.status_code}: {response.text[:500]}")


@contextmanager
def cognito_user(
    session: Any, stack: Stack, run_id: str, *, groups: Sequence[str] = ()
) -> Iterator[Callable[[], str]]:
    """A temporary user in the stack's pool; yields a sign-in that returns an ID token.

    ADMIN_USER_PASSWORD_AUTH must be enabled on the app client (ExplicitAuthFlows):
    https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_AdminInitiateAuth.html
    """
    idp = session.client("cognito-idp")
    # The pool signs users in by email (UsernameAttributes: email); example.com never receives
    # mail, and MessageAction=SUPPRESS sends none.
    username = f"docchat-e2e-{run_id}@example.com"
    password = secrets.token_urlsafe(24) + "aA1!"
    idp.admin_create_user(
        UserPoolId=stack.user_pool_id,
        Username=username,
        MessageAction="SUPPRESS",
        UserAttributes=[
            {"Name": "email", "Value": username},
            {"Name": "email_verified", "Value": "true"},
        ],
    )
    log.info("created the temporary user %s", username)
    try:
        idp.admin_set_user_password(
            UserPoolId=stack.user_pool_id, Username=username, Password=password, Permanent=True
        )
        for group in groups:  # the pool's groups (made by the caller) put in the ID token
            idp.admin_add_user_to_group(
                UserPoolId=stack.user_pool_id, Username=username, GroupName=group
            )

        def sign_in() -> str:
            try:
                answer = idp.admin_initiate_auth(
                    UserPoolId=stack.user_pool_id,
                    ClientId=stack.client_id,
                    AuthFlow="ADMIN_USER_PASSWORD_AUTH",
                    AuthParameters={"USERNAME": username, "PASSWORD": password},
                )
            except idp.exceptions.InvalidParameterException as exc:
                raise AssertionError(
                    f"signing the temporary user in failed ({exc}): the app client "
                    f"{stack.client_id} needs ALLOW_ADMIN_USER_PASSWORD_AUTH in ExplicitAuthFlows"
                ) from exc
            if "AuthenticationResult" not in answer:
                raise AssertionError(
                    f"signing in asked for a challenge ({answer.get('ChallengeName')}) instead "
                    "of answering with tokens"
                )
            token: str = answer["AuthenticationResult"]["IdToken"]
            return token

        yield sign_in
    finally:
        idp.admin_delete_user(UserPoolId=stack.user_pool_id, Username=username)
        log.info("deleted the temporary user %s", username)


class Registry:
    """The stack's document table, read the way the pipeline writes it (dynamodb_registry.py)."""

    def __init__(self, session: Any, stack: Stack) -> None:
        self._table = session.resource("dynamodb").Table(stack.table)

    def item(self, doc_id: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._table.get_item(
            Key={"doc_id": doc_id}, ConsistentRead=True
        ).get("Item")
        return item


class Executions:
    """The ingestion state machine's runs about one object key (for waits and diagnostics)."""

    def __init__(self, session: Any, stack: Stack, key: str) -> None:
        self._sfn = session.client("stepfunctions")
        self._arn = stack.state_machine_arn
        self._key = key
        self._inputs: dict[str, str] = {}

    def about_key(self, *, since: datetime) -> list[dict[str, Any]]:
        """Runs started after `since` (less a minute of clock skew) whose input names the key."""
        runs: list[dict[str, Any]] = []
        pages = self._sfn.get_paginator("list_executions").paginate(
            stateMachineArn=self._arn, PaginationConfig={"MaxItems": 200}
        )
        for page in pages:
            for run in page["executions"]:  # newest first
                if run["startDate"] < since - timedelta(minutes=1):
                    return runs
                if self._key in self._input(run["executionArn"]):
                    runs.append(run)
        return runs

    def _input(self, arn: str) -> str:
        if arn not in self._inputs:
            self._inputs[arn] = self._sfn.describe_execution(executionArn=arn).get("input", "")
        return self._inputs[arn]

    def summary(self, *, since: datetime) -> str:
        runs = self.about_key(since=since)
        if not runs:
            return "no execution of the ingestion state machine mentions this key"
        return "; ".join(f"{r['name']}: {r['status']}" for r in runs[:5])

    def known(self, *, since: datetime) -> set[str]:
        """The runs about the key so far, to tell them from the ones an action starts next."""
        return {r["executionArn"] for r in self.about_key(since=since)}

    def settle(self, *, since: datetime, known: set[str]) -> list[dict[str, Any]]:
        """Wait until the runs started after `since` (and not in `known`) have finished; none
        is fine once SETTLE_S passed without one (an event no rule routes starts nothing)."""
        started = time.monotonic()
        while True:
            runs = [r for r in self.about_key(since=since) if r["executionArn"] not in known]
            running = [r["name"] for r in runs if r["status"] == "RUNNING"]
            waited = time.monotonic() - started
            if (runs and not running) or (not runs and waited > SETTLE_S):
                return runs
            if waited > INGEST_TIMEOUT_S:
                raise AssertionError(f"executions still running after {waited:.0f} s: {running}")
            time.sleep(POLL_S)


def wait_indexed(
    registry: Registry, executions: Executions, doc_id: str, version: str, *, since: datetime
) -> dict[str, Any]:
    """The registry item once `version` of the document is INDEXED; fails with the registry's
    reason when it is FAILED, and with the last state seen when it takes too long."""
    started, seen = time.monotonic(), ""
    while True:
        item = registry.item(doc_id)
        if ingest_outcome(item, version) == "INDEXED":
            assert item is not None
            log.info("%s INDEXED after %.0f s", doc_id, time.monotonic() - started)
            return item
        state = describe_item(item)
        if state != seen:
            log.info("%s: %s", doc_id, state)
            seen = state
        if time.monotonic() - started > INGEST_TIMEOUT_S:
            raise AssertionError(
                f"{doc_id} version {version[:12]} is not INDEXED after {INGEST_TIMEOUT_S} s "
                f"(registry: {state}; executions: {executions.summary(since=since)})"
            )
        time.sleep(POLL_S)


def wait_removed(
    registry: Registry, executions: Executions, doc_id: str, *, since: datetime
) -> None:
    """Wait until the registry has forgotten the document."""
    started = time.monotonic()
    while (item := registry.item(doc_id)) is not None:
        if time.monotonic() - started > REMOVE_TIMEOUT_S:
            raise AssertionError(
                f"{doc_id} is still in the registry {REMOVE_TIMEOUT_S} s after its object was "
                f"deleted ({describe_item(item)}; executions: {executions.summary(since=since)})"
            )
        time.sleep(POLL_S)
    log.info("%s removed from the registry after %.0f s", doc_id, time.monotonic() - started)


def wait_listed(
    api: ChatApi, holds: Callable[[dict[str, dict[str, Any]]], bool], what: str
) -> None:
    """Wait until GET /documents (a DynamoDB Scan, eventually consistent) shows `what`."""
    started = time.monotonic()
    while not holds(listed := {d["doc_id"]: d for d in api.documents()}):
        if time.monotonic() - started > LISTED_TIMEOUT_S:
            raise AssertionError(f"GET documents does not show {what}: {listed}")
        time.sleep(POLL_S)


def ask_until(
    api: ChatApi,
    question: str,
    *,
    doc_ids: list[str] | None,
    ready: Callable[[ChatReply], bool],
    check: Callable[[ChatReply], None],
    what: str,
) -> ChatReply:
    """Ask until `ready` holds (new chunks become searchable after a delay), applying `check`
    to every reply on the way: what must never be seen fails at once."""
    started = time.monotonic()
    while True:
        reply = api.ask(question, doc_ids=doc_ids)
        check(reply)
        if ready(reply):
            return reply
        waited = time.monotonic() - started
        if waited > VISIBLE_TIMEOUT_S:
            raise AssertionError(
                f"{what} after {waited:.0f} s of asking; last answer: {reply.answer[:300]!r}, "
                f"{len(reply.passages)} passages"
            )
        log.info("%s not yet (%.0f s): asking again", what, waited)
        time.sleep(10)


def now() -> datetime:
    return datetime.now(UTC)


def remove_object(session: Any, bucket: str, key: str) -> None:
    """Every version and delete marker of `key`: the check leaves nothing behind. Versions go
    before markers, so no old version becomes current again on the way."""
    s3 = session.client("s3")
    versions, markers = [], []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=key):
        versions += [v["VersionId"] for v in page.get("Versions", []) if v["Key"] == key]
        markers += [m["VersionId"] for m in page.get("DeleteMarkers", []) if m["Key"] == key]
    for version_id in versions + markers:
        s3.delete_object(Bucket=bucket, Key=key, VersionId=version_id)
    log.info("removed %d versions and %d delete markers of %s", len(versions), len(markers), key)


def leave_no_trace(session: Any, stack: Stack, key: str, doc_id: str) -> None:
    """Undo a run, even one that failed halfway: delete the object the way a user does (so the
    pipeline removes the document and its chunks), then every version of it."""
    from botocore.exceptions import ClientError

    s3 = session.client("s3")
    try:
        s3.head_object(Bucket=stack.bucket, Key=key)
    except ClientError:
        current = False  # 404, or 403 without s3:ListBucket: no current object either way
    else:
        current = True
    if current:
        since = now()
        s3.delete_object(Bucket=stack.bucket, Key=key)
        try:
            wait_removed(
                Registry(session, stack), Executions(session, stack, key), doc_id, since=since
            )
        except AssertionError as exc:
            log.warning("cleanup: %s", exc)
    remove_object(session, stack.bucket, key)
