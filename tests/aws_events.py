"""AWS's events as their documentation pages show them (events/eventbridge/, each fixture the
page's own example, see its README), about the bucket and key a test names.

Only what names the object changes: the bucket (its name and the event's `resources`), the key
(URL-encoded as S3 encodes it: AWS's Powertools reads it back with `unquote_plus`) and the
sequencer. Everything else, `event-version` 1.1 and the bucket's `aws-generated-tags` included,
is the page's."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any
from urllib.parse import quote_plus

from tests.conftest import REPO

EVENTS = REPO / "events" / "eventbridge"
#: The deletions S3 sends, by (reason, deletion-type): which fixture shows each.
DELETIONS = {
    ("DeleteObject", "Delete Marker Created"): "object-deleted-delete-marker",
    ("DeleteObject", "Permanently Deleted"): "object-deleted-permanently",
    ("Lifecycle Expiration", "Delete Marker Created"): "lifecycle-expired-current",
    ("Lifecycle Expiration", "Permanently Deleted"): "lifecycle-expired-noncurrent",
}


@cache
def _fixture(name: str) -> str:
    return (EVENTS / f"{name}.json").read_text()


def documented(name: str) -> dict[str, Any]:
    """The fixture `name` as the page shows it (a fresh copy)."""
    loaded: dict[str, Any] = json.loads(_fixture(name))
    return loaded


def encoded_key(key: str) -> str:
    """A key as S3 writes it into an event: URL-encoded, spaces as '+', slashes kept."""
    return quote_plus(key, safe="/")


def s3_event(name: str, *, bucket: str, key: str, sequencer: str | None = None) -> dict[str, Any]:
    """The documented S3 event `name`, about `key` in `bucket`."""
    event = documented(name)
    event["resources"] = [f"arn:aws:s3:::{bucket}"]
    event["detail"]["bucket"]["name"] = bucket
    event["detail"]["object"]["key"] = encoded_key(key)
    if sequencer is not None:
        event["detail"]["object"]["sequencer"] = sequencer
    return event


def execution_event(
    name: str, *, input_event: dict[str, Any], execution_arn: str | None = None
) -> dict[str, Any]:
    """The documented Step Functions status change `name`, for a run started by `input_event`."""
    event = documented(name)
    event["detail"]["input"] = json.dumps(input_event)
    if execution_arn is not None:
        event["detail"]["executionArn"] = execution_arn
        event["resources"] = [execution_arn]
    return copy.deepcopy(event)
