"""The stack's sync, deployed: what moto cannot show. A web source defined in the artifacts bucket
is synced by the real function into the documents bucket, read by the pipeline as the page's
document (Register reads the object's metadata), written again once its object is deleted (the
role lets the function list the source's prefix), and removed with its definition; S3 itself
refuses a second run's lease (PutObject If-None-Match answers 412) and lets an expired one be
taken over (If-Match); EventBridge Scheduler holds the function's schedule. Run it with
`make e2e STACK=<name>`; the page synced is DOCCHAT_E2E_SITE (by default https://example.com/,
which IANA keeps for examples), which the function must reach."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from docchat.ingest.decision import doc_id_for, version_of
from docchat.sources.lease import LEASE_KEY
from docchat.sources.stack import definition_key, state_key
from docchat.sources.stack_sync import SOURCE_URL
from tests.e2e.check import Stack
from tests.e2e.live import (
    ChatApi,
    Executions,
    Registry,
    leave_no_trace,
    log,
    now,
    wait_indexed,
    wait_listed,
    wait_removed,
)

SITE = os.environ.get("DOCCHAT_E2E_SITE", "https://example.com/")
#: A scheduled run may hold the sources when the check invokes the function: it waits this long.
BUSY_WAIT_S = 900
#: What S3 answers a conditional write when the key exists, or another write races it.
RACED = ("PreconditionFailed", "ConditionalRequestConflict")


@pytest.fixture
def sync(stack: Stack, session: Any) -> Any:
    if not (stack.sync_function and stack.artifacts_bucket):
        pytest.fail("the stack lacks SyncFunctionName or ArtifactsBucketName: deploy this template")
    return session.client("lambda")


def invoke(
    client: Any, stack: Stack, event: dict[str, Any], *, wait: bool = True
) -> dict[str, Any]:
    """The function's result for `event`; with `wait`, invoked again while another run holds
    the sources (a scheduled run the check met)."""
    started = time.monotonic()
    while True:
        answer = client.invoke(FunctionName=stack.sync_function, Payload=json.dumps(event))
        result: dict[str, Any] = json.loads(answer["Payload"].read())
        assert "FunctionError" not in answer, result
        if not (wait and result.get("left_to_another")):
            return result
        if time.monotonic() - started > BUSY_WAIT_S:
            raise AssertionError(f"the sources stayed held for {BUSY_WAIT_S} s: {result}")
        log.info("another run holds the sources: %s", result["left_to_another"])
        time.sleep(30)


@pytest.fixture
def source(stack: Stack, session: Any, run_id: str, sync: Any) -> Iterator[str]:
    """A web source of one page, defined for this run; removed with all it wrote afterwards."""
    name = f"e2e-{run_id}"
    s3 = session.client("s3")
    definition = {"kind": "web", "url": SITE, "depth": 0, "rate": 0}
    s3.put_object(
        Bucket=stack.artifacts_bucket, Key=definition_key(name), Body=json.dumps(definition)
    )
    try:
        yield name
    finally:
        s3.delete_object(Bucket=stack.artifacts_bucket, Key=definition_key(name))
        for item in _written(s3, stack, name):
            leave_no_trace(session, stack, item, doc_id_for(f"{stack.bucket}/{item}"))
        s3.delete_object(Bucket=stack.artifacts_bucket, Key=state_key(name))


def _written(s3: Any, stack: Stack, name: str) -> list[str]:
    listed = s3.list_objects_v2(Bucket=stack.bucket, Prefix=f"sources/{name}/")
    return [item["Key"] for item in listed.get("Contents", [])]


def test_a_synced_page_is_indexed_by_its_address_and_removed_with_its_definition(
    stack: Stack, session: Any, api: ChatApi, sync: Any, source: str
) -> None:
    s3 = session.client("s3")
    since = now()

    # When the function syncs the source
    result = invoke(sync, stack, {"source": source})

    # Then it wrote the page once, under the source's prefix, with its address
    (done,) = result["sources"]
    assert (done["name"], done["fetched"], done["failed"]) == (source, 1, 0), result
    (key,) = _written(s3, stack, source)
    head = s3.head_object(Bucket=stack.bucket, Key=key)
    assert head["Metadata"][SOURCE_URL] == SITE
    body = s3.get_object(Bucket=stack.bucket, Key=key)["Body"].read()

    # And the pipeline indexed it as the page's document (Register read the metadata)
    doc_id = doc_id_for(f"{stack.bucket}/{key}")
    registry, executions = Registry(session, stack), Executions(session, stack, key)
    item = wait_indexed(registry, executions, doc_id, version_of(body), since=since)
    assert (item["source"], item["stored_at"]) == (SITE, f"{stack.bucket}/{key}")
    wait_listed(api, lambda listed: listed.get(doc_id, {}).get("source") == SITE, "the page")

    # When it runs again with nothing changed, nothing is written
    again = invoke(sync, stack, {"source": source})["sources"][0]
    assert (again["fetched"], again["unchanged"]) == (0, 1), again

    # When its object is deleted (as DELETE /documents/{id} deletes it) and the source syncs,
    # then the page is written again: the role lets the function list the source's prefix
    s3.delete_object(Bucket=stack.bucket, Key=key)
    back = invoke(sync, stack, {"source": source})["sources"][0]
    assert (back["fetched"], back["failed"]) == (1, 0), back
    assert _written(s3, stack, source) == [key]

    # When its definition is deleted and every source is synced
    s3.delete_object(Bucket=stack.artifacts_bucket, Key=definition_key(source))
    removed = invoke(sync, stack, {})["removed_sources"]

    # Then its object is deleted, and the pipeline removes its document
    assert {"name": source, "removed": 1, "last_failure": ""} in removed, removed
    assert _written(s3, stack, source) == []
    wait_removed(registry, executions, doc_id, since=since)


def test_s3_refuses_a_second_runs_lease_and_hands_over_an_expired_one(
    stack: Stack, session: Any, sync: Any, source: str
) -> None:
    s3 = session.client("s3")
    held = {"run": "e2e-holder", "started": time.time(), "until": time.time() + 120}
    # Given a lease another run holds (written only if none is: a scheduled run may hold one)
    _take(s3, stack, held)
    try:
        # When the function starts, then it leaves the sources to that run and writes nothing
        result = invoke(sync, stack, {"source": source}, wait=False)
        assert result["left_to_another"].startswith("another sync, started "), result
        assert result["sources"] == [] and _written(s3, stack, source) == []
    finally:
        s3.delete_object(Bucket=stack.artifacts_bucket, Key=LEASE_KEY)

    # Given a lease left by a run that stopped (expired)
    _take(s3, stack, {**held, "until": time.time() - 1})
    # When the function starts, then it takes the lease over (If-Match), syncs, and releases it
    result = invoke(sync, stack, {"source": source}, wait=False)
    assert result["left_to_another"] == "" and result["sources"][0]["fetched"] == 1, result
    listed = s3.list_objects_v2(Bucket=stack.artifacts_bucket, Prefix=LEASE_KEY)
    assert listed.get("KeyCount", 0) == 0, "the run left its lease behind"


def _take(s3: Any, stack: Stack, lease: dict[str, Any]) -> None:
    """Write `lease` as the sources' lease once no run holds one (If-None-Match, as a run)."""
    from botocore.exceptions import ClientError

    started = time.monotonic()
    while True:
        try:
            s3.put_object(
                Bucket=stack.artifacts_bucket,
                Key=LEASE_KEY,
                Body=json.dumps(lease),
                IfNoneMatch="*",
            )
            return
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in RACED:
                raise
        if time.monotonic() - started > BUSY_WAIT_S:
            raise AssertionError(f"a run held the sources' lease for {BUSY_WAIT_S} s")
        time.sleep(30)


def test_the_scheduler_invokes_the_sync_function_on_the_stacks_schedule(
    stack: Stack, session: Any, sync: Any
) -> None:
    arn = sync.get_function(FunctionName=stack.sync_function)["Configuration"]["FunctionArn"]
    scheduler = session.client("scheduler")
    found = [
        s
        for page in scheduler.get_paginator("list_schedules").paginate()
        for s in page["Schedules"]
        if s.get("Target", {}).get("Arn") == arn
    ]
    assert len(found) == 1, f"schedules targeting {arn}: {found}"
    (summary,) = found
    schedule = scheduler.get_schedule(Name=summary["Name"], GroupName=summary["GroupName"])
    assert schedule["State"] == "ENABLED"
    parameters = stack_parameters(session, stack)
    assert schedule["ScheduleExpression"] == parameters["SyncSchedule"]


def stack_parameters(session: Any, stack: Stack) -> dict[str, str]:
    described = session.client("cloudformation").describe_stacks(StackName=stack.name)
    return {
        p["ParameterKey"]: p.get("ParameterValue", "")
        for p in described["Stacks"][0].get("Parameters", [])
    }
