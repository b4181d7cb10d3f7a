"""One sync of the stack's sources at a time. A scheduled run can start while the previous one
still crawls a slow site; both would write and delete the same objects. A run first takes a
lease, an object in the artifacts bucket created only if absent (S3 conditional writes); a run
that finds it held by a live run leaves the sources to it, and ends saying so.

Why a lease and not the function's reserved concurrency of 1: "You can reserve up to the
Unreserved account concurrency value that is shown, minus 100 for functions that don't have
reserved concurrency" (Lambda developer guide, "Configuring reserved concurrency for a function",
https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html, read 2026-12-07),
so an account whose concurrency quota is 10 (new accounts may start that low) cannot reserve
any, and the deploy would fail. The lease uses PutObject with `If-None-Match: *` (fails with 412
PreconditionFailed when the key exists, or 409 ConditionalRequestConflict when another
conditional write races it), PutObject with `If-Match: <ETag>` to take over an expired lease,
and DeleteObject with `If-Match` to release only its own (S3 user guide, "How to prevent object
overwrites with conditional writes",
https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html, and "Add
preconditions to S3 operations with conditional requests",
https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-requests.html, read
2026-12-07). A lease expires, so a run Lambda stopped (timeout, out of memory) does not lock
the sources for ever."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ValidationError

from docchat.errors import ObjectMissingError
from docchat.ports import SyncedObjects
from docchat.sources.stack import STATES

#: Beside the sources' states: not a definition (`sources/<name>.json`), nor a state (`.json`).
LEASE_KEY = f"{STATES}sync.lease"
#: Longer than the sync function may run (SyncFunction's Timeout, 900 s, in template.yaml;
#: tests/infra checks it): a lease older than that was left by a run Lambda stopped.
LEASE_S = 16 * 60


class Lease(BaseModel):
    """Who holds the sources, since when, and until when at the latest (epoch seconds)."""

    run: str
    started: float
    until: float


@dataclass(frozen=True)
class Held:
    """The lease this run took, and the ETag it was written with (to release only it)."""

    lease: Lease
    etag: str


@dataclass(frozen=True)
class Busy:
    """Another run holds the sources (`holder`, when its lease could be read)."""

    holder: Lease | None

    @property
    def said(self) -> str:
        if self.holder is None:
            return "another sync took the sources as this one started: this run left them to it"
        return (
            f"another sync, started {_shown(self.holder.started)}, holds the sources (its lease "
            f"runs until {_shown(self.holder.until)}): this run left them to it"
        )


def take_lease(objects: SyncedObjects, bucket: str, *, now: float) -> Held | Busy:
    """The sources' lease for this run, or who holds it: created if absent, taken over if its
    holder's time is up, else left to it."""
    mine = Lease(run=uuid.uuid4().hex, started=now, until=now + LEASE_S)
    body = mine.model_dump(mode="json")
    etag = objects.create_json(bucket, LEASE_KEY, body)
    if etag is not None:
        return Held(mine, etag)
    try:
        data, found = objects.read_tagged(bucket, LEASE_KEY)
    except ObjectMissingError:  # released between the two calls: one more try
        etag = objects.create_json(bucket, LEASE_KEY, body)
        return Busy(None) if etag is None else Held(mine, etag)
    try:
        holder: Lease | None = Lease.model_validate_json(data)
    except ValidationError:  # not a lease docchat wrote: taken over like an expired one
        holder = None
    if holder is not None and holder.until > now:
        return Busy(holder)
    etag = objects.replace_json(bucket, LEASE_KEY, body, etag=found)
    return Busy(holder) if etag is None else Held(mine, etag)


def release_lease(objects: SyncedObjects, bucket: str, held: Held) -> None:
    """The lease deleted if it is still this run's (a run that outlived it has lost it)."""
    objects.delete_if(bucket, LEASE_KEY, etag=held.etag)


def _shown(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
