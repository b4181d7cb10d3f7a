"""Every documented S3 and Step Functions event variant (events/eventbridge/) through the real
state machine and handlers: only the deletion of the current object removes a document."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from docchat.ingest.local import doc_id_for
from docchat.ingest.steps import register
from docchat.models import DocStatus, StepEvent
from tests.conftest import REPO
from tests.functions.conftest import DOCS_BUCKET, FakeContext, Pipeline, _load_handler
from tests.functions.test_ingest_pipeline import _pdf

EVENTS = REPO / "events" / "eventbridge"


@cache
def _fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


def _event(pipeline: Pipeline, name: str, key: str) -> dict[str, Any]:
    """The documented event `name`, about `key` in the test bucket, newer than all before it."""
    event = copy.deepcopy(_fixture(name))
    event["resources"] = [f"arn:aws:s3:::{DOCS_BUCKET}"]
    event["detail"]["bucket"]["name"] = DOCS_BUCKET
    event["detail"]["object"].update(key=key, sequencer=pipeline.next_sequencer())
    return event


def _record(pipeline: Pipeline, key: str) -> Any:
    return pipeline.services.registry.get(doc_id_for(f"{DOCS_BUCKET}/{key}"))


def _texts(pipeline: Pipeline, key: str) -> str:
    chunks = pipeline.services.index.document_chunks(doc_id_for(f"{DOCS_BUCKET}/{key}"))
    return " ".join(c.text for c in chunks)


def _versions(pipeline: Pipeline, key: str) -> list[str]:
    """Version ids of `key`, the current one last (timestamps can tie within a second)."""
    listed = pipeline.s3.list_object_versions(Bucket=DOCS_BUCKET, Prefix=key)["Versions"]
    return [v["VersionId"] for v in sorted(listed, key=lambda v: v["IsLatest"])]


def _upload(pipeline: Pipeline, key: str, data: bytes) -> str:
    """Put `data` under `key`, run the documented Object Created event; the new version id."""
    version = pipeline.s3.put_object(Bucket=DOCS_BUCKET, Key=key, Body=data)["VersionId"]
    execution = pipeline.run(_event(pipeline, "object-created", key))
    assert execution["status"] == "SUCCEEDED", execution
    return str(version)


def test_fixtures_have_the_documented_shape() -> None:
    deleted = {
        name: _fixture(name)["detail"]
        for name in (
            "object-deleted-delete-marker",
            "object-deleted-permanently",
            "lifecycle-expired-current",
            "lifecycle-expired-noncurrent",
        )
    }
    assert {name: (d["reason"], d["deletion-type"]) for name, d in deleted.items()} == {
        "object-deleted-delete-marker": ("DeleteObject", "Delete Marker Created"),
        "object-deleted-permanently": ("DeleteObject", "Permanently Deleted"),
        "lifecycle-expired-current": ("Lifecycle Expiration", "Delete Marker Created"),
        "lifecycle-expired-noncurrent": ("Lifecycle Expiration", "Permanently Deleted"),
    }
    for name in deleted:  # lifecycle events come from S3 itself, with no source IP
        lifecycle = name.startswith("lifecycle")
        assert (deleted[name]["requester"] == "s3.amazonaws.com") is lifecycle, name
        assert ("source-ip-address" in deleted[name]) is not lifecycle, name
    assert "size" in _fixture("object-created")["detail"]["object"]
    assert all("size" not in d["object"] for d in deleted.values())  # deletions carry no size
    readme = (EVENTS / "README.md").read_text()
    for path in EVENTS.glob("*.json"):
        assert f"`{path.name}`" in readme, f"{path.name} has no documentation page in README.md"


def test_object_created_is_indexed(pipeline: Pipeline) -> None:
    _upload(pipeline, "created.pdf", _pdf("gantries"))

    record = _record(pipeline, "created.pdf")
    assert record is not None and record.status == DocStatus.INDEXED
    assert "gantries" in _texts(pipeline, "created.pdf")


def test_delete_marker_removes_the_document(pipeline: Pipeline) -> None:
    _upload(pipeline, "marked.pdf", _pdf("cranes"))
    pipeline.s3.delete_object(Bucket=DOCS_BUCKET, Key="marked.pdf")  # a delete marker

    execution = pipeline.run(_event(pipeline, "object-deleted-delete-marker", "marked.pdf"))

    assert execution["status"] == "SUCCEEDED"
    assert _record(pipeline, "marked.pdf") is None
    assert _texts(pipeline, "marked.pdf") == ""
    assert pipeline.states_entered(execution)[-3:] == [
        "SettleAfterRemove",
        "SweepAfterRemove",
        "Removed",
    ]


def test_lifecycle_expiry_of_the_current_version_removes_the_document(pipeline: Pipeline) -> None:
    _upload(pipeline, "expired.pdf", _pdf("hoists"))
    pipeline.s3.delete_object(Bucket=DOCS_BUCKET, Key="expired.pdf")  # what Expiration does

    execution = pipeline.run(_event(pipeline, "lifecycle-expired-current", "expired.pdf"))

    assert execution["status"] == "SUCCEEDED"
    assert _record(pipeline, "expired.pdf") is None
    assert _texts(pipeline, "expired.pdf") == ""


def test_permanent_delete_of_the_only_version_removes_the_document(pipeline: Pipeline) -> None:
    version = _upload(pipeline, "purged.pdf", _pdf("winches"))
    pipeline.s3.delete_object(Bucket=DOCS_BUCKET, Key="purged.pdf", VersionId=version)

    execution = pipeline.run(_event(pipeline, "object-deleted-permanently", "purged.pdf"))

    assert execution["status"] == "SUCCEEDED"
    assert _record(pipeline, "purged.pdf") is None
    assert _texts(pipeline, "purged.pdf") == ""


def test_lifecycle_expiry_of_a_noncurrent_version_keeps_the_document(pipeline: Pipeline) -> None:
    # Given a document uploaded twice: the first version is now noncurrent
    _upload(pipeline, "manual.pdf", _pdf("pulleys"))
    _upload(pipeline, "manual.pdf", _pdf("capstans"))
    old, current = _versions(pipeline, "manual.pdf")
    indexed = _record(pipeline, "manual.pdf")
    calls = dict(pipeline.calls)

    # When NoncurrentVersionExpiration deletes the old version 30 days later
    pipeline.s3.delete_object(Bucket=DOCS_BUCKET, Key="manual.pdf", VersionId=old)
    execution = pipeline.run(_event(pipeline, "lifecycle-expired-noncurrent", "manual.pdf"))

    # Then nothing runs, and the live document stays indexed
    assert execution["status"] == "SUCCEEDED"
    assert pipeline.states_entered(execution)[-1] == "NoncurrentVersionExpired"
    assert dict(pipeline.calls) == calls
    assert _record(pipeline, "manual.pdf") == indexed
    assert "capstans" in _texts(pipeline, "manual.pdf")
    assert _versions(pipeline, "manual.pdf") == [current]


def test_permanent_delete_of_a_noncurrent_version_keeps_the_document(pipeline: Pipeline) -> None:
    _upload(pipeline, "kept.pdf", _pdf("bollards"))
    _upload(pipeline, "kept.pdf", _pdf("fenders"))
    old, _ = _versions(pipeline, "kept.pdf")
    indexed = _record(pipeline, "kept.pdf")

    pipeline.s3.delete_object(Bucket=DOCS_BUCKET, Key="kept.pdf", VersionId=old)
    execution = pipeline.run(_event(pipeline, "object-deleted-permanently", "kept.pdf"))

    assert execution["status"] == "SUCCEEDED"
    assert pipeline.states_entered(execution)[-1] == "Unchanged"  # Register: same bytes
    record = _record(pipeline, "kept.pdf")
    assert record is not None and (record.status, record.version) == (
        DocStatus.INDEXED,
        indexed.version,
    )
    assert "fenders" in _texts(pipeline, "kept.pdf")


def test_permanent_delete_of_the_newest_version_indexes_the_previous_one(
    pipeline: Pipeline,
) -> None:
    # Given two versions, the newer indexed
    _upload(pipeline, "rollback.pdf", _pdf("rudders"))
    first = _record(pipeline, "rollback.pdf")
    _upload(pipeline, "rollback.pdf", _pdf("keels"))
    _, newest = _versions(pipeline, "rollback.pdf")

    # When the newest version is deleted for good, the previous one is current again
    pipeline.s3.delete_object(Bucket=DOCS_BUCKET, Key="rollback.pdf", VersionId=newest)
    execution = pipeline.run(_event(pipeline, "object-deleted-permanently", "rollback.pdf"))

    # Then the index follows S3: the document now holds the previous version's text
    assert execution["status"] == "SUCCEEDED", execution
    record = _record(pipeline, "rollback.pdf")
    assert record is not None and record.status == DocStatus.INDEXED
    assert record.version == first.version
    texts = _texts(pipeline, "rollback.pdf")
    assert "rudders" in texts and "keels" not in texts


def test_execution_status_change_marks_the_stuck_document_failed(pipeline: Pipeline) -> None:
    # Given a run that registered its document and then timed out
    key = "stuck.pdf"
    pipeline.s3.put_object(Bucket=DOCS_BUCKET, Key=key, Body=_pdf("davits"))
    event = copy.deepcopy(_fixture("execution-status-change"))
    detail = event["detail"]
    started = json.loads(detail["input"])
    started["detail"]["bucket"]["name"] = DOCS_BUCKET
    started["detail"]["object"]["key"] = key
    detail["input"] = json.dumps(started)
    services = pipeline.services
    claimed = register(
        StepEvent.model_validate({"event": started, "execution_id": detail["executionArn"]}),
        objects=services.objects,
        registry=services.registry,
        settings=services.settings,
    )
    assert claimed.action == "process"

    # When the watchdog gets the documented status change
    result = _load_handler("watchdog").handler(event, FakeContext("watchdog"))

    # Then the document is FAILED with a reason that says what to do
    assert result["status"] == DocStatus.FAILED.value
    record = _record(pipeline, key)
    assert record is not None and record.status == DocStatus.FAILED
    assert record.error == "ingestion ran out of time and was stopped: upload the file again"
