"""AWS's events parse as AWS documents them and keep parsing whatever AWS adds or retypes.

docchat's models of S3's and Step Functions' events declare only the fields docchat reads; a
field added anywhere, or an unread field whose type changes, must never break parsing (S3's
event-version 1.1 made `detail.bucket` carry a map of tags, which a hand-written `dict[str, str]`
rejected: the cloud then ingested nothing)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import S3EventBridgeNotificationEvent
from hypothesis import given, settings
from hypothesis import strategies as st

from docchat.payloads import ExecutionStatusEvent, FailureTask, S3Event, StepEvent
from tests.aws_events import documented, encoded_key, execution_event, s3_event
from tests.conftest import examples

S3_FIXTURES = (
    "object-created",
    "object-deleted-delete-marker",
    "object-deleted-permanently",
    "lifecycle-expired-current",
    "lifecycle-expired-noncurrent",
)
EXECUTION_FIXTURES = ("execution-failed", "execution-timed-out")
#: The paths docchat reads; everything else may be anything.
S3_READ = {("detail-type",), ("detail", "bucket", "name"), ("detail", "object", "key")}
S3_READ_IF_PRESENT = {("detail", "object", "sequencer")}
EXECUTION_READ = {("detail", "executionArn"), ("detail", "status"), ("detail", "input")}
EXECUTION_READ_IF_PRESENT = {("detail", "error"), ("detail", "cause")}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _mutated(draw: st.DrawFn, node: Any, path: tuple[str, ...], read: set[tuple[str, ...]]) -> Any:
    """`node` with unknown fields added to each object and every unread field (one that is
    not on, or above, a path docchat reads) possibly replaced by any JSON value."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        here = (*path, key)
        above_read = any(r[: len(here)] == here for r in read)
        if not above_read and draw(st.booleans()):
            out[key] = draw(json_values)
        else:
            out[key] = _mutated(draw, value, here, read)
    for extra in draw(st.lists(st.text(min_size=1, max_size=12), max_size=3)):
        if extra not in out:
            out[extra] = draw(json_values)
    return out


@st.composite
def s3_events(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    name = draw(st.sampled_from(S3_FIXTURES))
    original = s3_event(name, bucket="docchat-documents", key="reports/Q3 (final) é.pdf")
    return original, _mutated(draw, copy.deepcopy(original), (), S3_READ | S3_READ_IF_PRESENT)


@st.composite
def execution_events(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    name = draw(st.sampled_from(EXECUTION_FIXTURES))
    started = s3_event("object-created", bucket="docchat-documents", key="a.pdf")
    original = execution_event(name, input_event=started)
    read = EXECUTION_READ | EXECUTION_READ_IF_PRESENT
    return original, _mutated(draw, copy.deepcopy(original), (), read)


@pytest.mark.parametrize("name", S3_FIXTURES)
def test_aws_events_documented_s3_events_name_their_object(name: str) -> None:
    event = S3Event.model_validate(documented(name))

    ref = event.object_ref()
    assert (ref.bucket, ref.key) == ("amzn-s3-demo-bucket1", "example-key")
    assert ref.sequencer == documented(name)["detail"]["object"]["sequencer"]


@settings(max_examples=examples(120), deadline=None)
@given(s3_events())
def test_aws_events_s3_parsing_ignores_what_docchat_does_not_read(
    events: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    original, mutated = events
    expected = S3Event.model_validate(original).object_ref()

    assert S3Event.model_validate(mutated).object_ref() == expected
    step = StepEvent.model_validate({"event": mutated, "execution_id": "arn:run"})
    assert step.event.object_ref() == expected
    failure = FailureTask.model_validate({"event": mutated, "error": "X", "cause": "{}"})
    assert failure.event.object_ref() == expected


@settings(max_examples=examples(80), deadline=None)
@given(execution_events())
def test_aws_events_execution_parsing_ignores_what_docchat_does_not_read(
    events: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    original, mutated = events

    parsed = ExecutionStatusEvent.model_validate(mutated).detail
    expected = ExecutionStatusEvent.model_validate(original).detail
    assert (parsed.executionArn, parsed.status, parsed.input) == (
        expected.executionArn,
        expected.status,
        expected.input,
    )
    assert S3Event.model_validate_json(parsed.input or "").object_ref().key == "a.pdf"


@settings(max_examples=examples(150), deadline=None)
@given(st.text(min_size=1, max_size=40).filter(lambda k: "\x00" not in k))
def test_aws_events_keys_decode_as_powertools_decodes_them(key: str) -> None:
    event = s3_event("object-created", bucket="docchat-documents", key=key)

    ours = S3Event.model_validate(event).object_ref().key
    powertools = S3EventBridgeNotificationEvent(event).detail.object.key
    assert ours == powertools == key


def test_aws_events_a_key_with_plus_and_percent_is_decoded_once() -> None:
    event = s3_event("object-created", bucket="b-b-b", key="Q3+Q4 100% (final).pdf")
    assert event["detail"]["object"]["key"] == encoded_key("Q3+Q4 100% (final).pdf")

    assert S3Event.model_validate(event).object_ref().key == "Q3+Q4 100% (final).pdf"


def test_aws_events_execution_event_without_input_or_error_parses() -> None:
    event = documented("execution-failed")
    event["detail"]["input"] = None  # left out when it is too large
    event["detail"]["inputDetails"] = {"included": False}

    detail = ExecutionStatusEvent.model_validate(event).detail
    assert (detail.input, detail.error, detail.cause) == (None, None, None)
    assert json.loads(json.dumps(event))["detail"]["status"] == "FAILED"
