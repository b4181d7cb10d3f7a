"""Collections on a deployed stack (issue #31): two temporary Cognito users in two temporary
groups, mapped to two collections by access/groups.json in the artifacts bucket; a PDF
uploaded under each collection's key prefix; each user lists, reads and is answered from
their own only, and the other's document is a 404. Runs only with `make e2e STACK=<name>`
on a stack with ApiAuth=COGNITO; the mapping the stack had is put back afterwards."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from docchat.ingest.decision import doc_id_for, version_of
from docchat.serve.access import GROUPS_KEY, GROUPS_TTL_S
from tests.conftest import EXAMPLES
from tests.e2e.check import Stack
from tests.e2e.live import (
    ChatApi,
    Executions,
    Registry,
    TokenAuth,
    cognito_user,
    leave_no_trace,
    now,
    wait_indexed,
    wait_listed,
)

PDFS = {"a": EXAMPLES / "dmca.pdf", "b": EXAMPLES / "i1040nr.pdf"}


@pytest.fixture
def mapping(stack: Stack, session: Any, run_id: str) -> Iterator[dict[str, str]]:
    """Two groups and their collections, in the stack's mapping; the old mapping restored."""
    if stack.auth != "COGNITO" or not stack.artifacts_bucket:
        pytest.skip("collections by Cognito group need a stack with ApiAuth=COGNITO")
    s3, idp = session.client("s3"), session.client("cognito-idp")
    names = {side: f"e2e-{side}-{run_id}"[:63].lower() for side in PDFS}
    try:
        before: bytes | None = s3.get_object(Bucket=stack.artifacts_bucket, Key=GROUPS_KEY)[
            "Body"
        ].read()
    except s3.exceptions.NoSuchKey:
        before = None
    old = json.loads(before) if before else {}
    groups = {**old.get("groups", {})}
    for name in names.values():
        idp.create_group(UserPoolId=stack.user_pool_id, GroupName=name)
        groups[name] = {"read": [name], "write": [name]}
    s3.put_object(
        Bucket=stack.artifacts_bucket,
        Key=GROUPS_KEY,
        Body=json.dumps({**old, "groups": groups}).encode(),
    )
    time.sleep(GROUPS_TTL_S + 1)  # a warm chat function reads the mapping again by then
    try:
        yield names
    finally:
        if before is None:
            s3.delete_object(Bucket=stack.artifacts_bucket, Key=GROUPS_KEY)
        else:
            s3.put_object(Bucket=stack.artifacts_bucket, Key=GROUPS_KEY, Body=before)
        for name in names.values():
            idp.delete_group(UserPoolId=stack.user_pool_id, GroupName=name)


def test_stack_two_cognito_users_see_only_their_collections(
    stack: Stack, session: Any, run_id: str, mapping: dict[str, str]
) -> None:
    s3 = session.client("s3")
    registry = Registry(session, stack)
    keys = {side: f"collections/{mapping[side]}/e2e/{PDFS[side].name}" for side in PDFS}
    ids = {side: doc_id_for(f"{stack.bucket}/{key}") for side, key in keys.items()}
    since = now()
    try:
        for side, key in keys.items():
            data = PDFS[side].read_bytes()
            s3.put_object(Bucket=stack.bucket, Key=key, Body=data, ContentType="application/pdf")
        for side, key in keys.items():
            item = wait_indexed(
                registry,
                Executions(session, stack, key),
                ids[side],
                version_of(PDFS[side].read_bytes()),
                since=since,
            )
            assert item["collections"] == [mapping[side]]  # placed by its key
        with (
            cognito_user(session, stack, f"{run_id}-a", groups=[mapping["a"]]) as sign_in_a,
            cognito_user(session, stack, f"{run_id}-b", groups=[mapping["b"]]) as sign_in_b,
        ):
            for side, sign_in in (("a", sign_in_a), ("b", sign_in_b)):
                other = "b" if side == "a" else "a"
                api = ChatApi(stack, TokenAuth(sign_in))
                wait_listed(
                    api,
                    lambda listed, side=side, other=other: (
                        ids[side] in listed and ids[other] not in listed
                    ),
                    f"only {ids[side]} of the two",
                )
                assert api.get(f"documents/{ids[side]}").status_code == 200
                for suffix in ("", "/file", "/pages/1"):
                    outside = api.get(f"documents/{ids[other]}{suffix}")
                    assert outside.status_code == 404, (suffix, outside.text[:300])
                assert api.call("DELETE", f"documents/{ids[other]}").status_code == 404
                reply = api.ask("What does this document say?")
                assert ids[other] not in json.dumps(reply.passages)
                body = {"messages": [{"role": "user", "content": "x"}], "doc_ids": [ids[other]]}
                assert api.call("POST", "chat", body).status_code == 404
                # A move is a DynamoDB UpdateItem the chat function's role must allow (issue
                # 40: it answered 500 on every stack); into the collection it is in, a no-op.
                move = {"collections": [mapping[side]]}
                moved = api.call("PUT", f"documents/{ids[side]}/collections", move)
                assert moved.status_code == 200, moved.text[:300]
                assert moved.json()["collections"] == [mapping[side]]
                outside = api.call("PUT", f"documents/{ids[other]}/collections", move)
                assert outside.status_code == 404
    finally:
        for side, key in keys.items():
            leave_no_trace(session, stack, key, ids[side])
