"""Every documented S3 and Step Functions event variant (events/eventbridge/) through the real
state machine and handlers: only the deletion of the current object removes a document."""

from __future__ import annotations

import json
from typing import Any

import pytest

from docchat.adapters.s3_uploads import S3Uploads
from docchat.ingest.decision import doc_id_for
from docchat.ingest.steps import register
from docchat.models import DocStatus
from docchat.payloads import StepEvent
from docchat.processes import RegisterSettings
from docchat.serve.access import ADMIN
from docchat.wiring.cloud import services as function_services
from tests.aws_events import EVENTS, documented, encoded_key, execution_event, s3_event
from tests.functions.conftest import DOCS_BUCKET, FakeContext, Pipeline, _load_handler
from tests.functions.test_ingest_pipeline import _pdf

#: Keys as people name files: spaces, '+', parentheses, non-ASCII letters, folders.
ODD_KEYS = (
    "My Report (final) é.pdf",
    "Q3+Q4 results.pdf",
    "Bericht über Straße & Brücke/Ölpreis - 2026 (v2).pdf",
    "日本語の資料.pdf",
)


def _event(pipeline: Pipeline, name: str, key: str) -> dict[str, Any]:
    """The documented event `name`, about `key` in the test bucket, newer than all before it."""
    return s3_event(name, bucket=DOCS_BUCKET, key=key, sequencer=pipeline.next_sequencer())


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
        name: documented(name)["detail"]
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
    created = documented("object-created")["detail"]
    assert "size" in created["object"]
    assert all("size" not in d["object"] for d in deleted.values())  # deletions carry no size
    # S3's events since July 2026: event-version 1.1, and the bucket a stack made carries the
    # tags CloudFormation gave it (a map, where the bucket's other fields are strings).
    assert {d["event-version"] for d in [created, *deleted.values()]} == {"1.1"}
    assert isinstance(created["bucket"]["aws-generated-tags"], dict)
    assert created["bucket"]["aws-generated-tags"]["aws:cloudformation:logical-id"]
    assert {
        documented(n)["detail"]["status"] for n in ("execution-failed", "execution-timed-out")
    } == {
        "FAILED",
        "TIMED_OUT",
    }
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


def _claimed_run(pipeline: Pipeline, key: str, execution_arn: str) -> dict[str, Any]:
    """A run that registered `key` and then stopped: the S3 event it started from."""
    pipeline.s3.put_object(Bucket=DOCS_BUCKET, Key=key, Body=_pdf("davits"))
    started = _event(pipeline, "object-created", key)
    services = function_services("register")
    claimed = register(
        StepEvent.model_validate({"event": started, "execution_id": execution_arn}),
        objects=services.objects,
        registry=services.registry,
        settings=services.view(RegisterSettings),
        index_location=services.index.location,
    )
    assert claimed.action == "process"
    return started


def test_execution_timed_out_marks_the_stuck_document_failed(pipeline: Pipeline) -> None:
    # Given a run that registered its document and then timed out
    arn = documented("execution-timed-out")["detail"]["executionArn"]
    started = _claimed_run(pipeline, "stuck (copy).pdf", arn)

    # When the watchdog gets the documented status change
    event = execution_event("execution-timed-out", input_event=started)
    result = _load_handler("watchdog").handler(event, FakeContext("watchdog"))

    # Then the document is FAILED with a reason that says what to do
    assert result["status"] == DocStatus.FAILED.value
    record = _record(pipeline, "stuck (copy).pdf")
    assert record is not None and record.status == DocStatus.FAILED
    assert record.error == "ingestion ran out of time and was stopped: upload the file again"


class _Executions:
    """Step Functions' DescribeExecution of a run that failed outside any Catch."""

    def __init__(self, input_event: dict[str, Any]) -> None:
        self.input = json.dumps(input_event)
        self.asked: list[str] = []

    def failure(self, execution_arn: str) -> Any:
        from docchat.payloads import ExecutionFailure

        self.asked.append(execution_arn)
        cause = "The state/task 'Chunk' returned a result with a size exceeding the maximum"
        return ExecutionFailure(input=self.input, error="States.DataLimitExceeded", cause=cause)


def test_execution_failed_records_the_error_that_ended_the_run(pipeline: Pipeline) -> None:
    # Given a run that failed where no Catch reaches (a state over 256 KiB)
    arn = documented("execution-failed")["detail"]["executionArn"]
    started = _claimed_run(pipeline, "huge.pdf", arn)
    executions = _Executions(started)
    pipeline.services.executions = executions

    # When the watchdog gets the documented FAILED event, which carries no error
    event = execution_event("execution-failed", input_event=started)
    _load_handler("watchdog").handler(event, FakeContext("watchdog"))

    # Then it asks Step Functions why, and the document says so, not "failed unexpectedly"
    assert executions.asked == [arn]
    record = _record(pipeline, "huge.pdf")
    assert record is not None and record.status == DocStatus.FAILED
    assert record.error_code == "stopped"
    assert "split it into smaller files" in record.error


@pytest.mark.parametrize("key", ODD_KEYS)
def test_documented_events_ingest_and_delete_odd_keys(pipeline: Pipeline, key: str) -> None:
    # Given an object whose key S3 URL-encodes in its events
    assert encoded_key(key) != key
    pipeline.s3.put_object(Bucket=DOCS_BUCKET, Key=key, Body=_pdf("gangways"))

    # When the documented Object Created event names it
    created = pipeline.run(_event(pipeline, "object-created", key))

    # Then that object is the document, indexed under its own name (not a skipped run)
    assert created["status"] == "SUCCEEDED", created
    assert pipeline.states_entered(created)[-1] == "Done"
    record = _record(pipeline, key)
    assert record is not None and record.status == DocStatus.INDEXED
    assert record.source == f"{DOCS_BUCKET}/{key}"
    assert "gangways" in _texts(pipeline, key)

    # And the documented deletion removes it
    pipeline.s3.delete_object(Bucket=DOCS_BUCKET, Key=key)
    deleted = pipeline.run(_event(pipeline, "object-deleted-delete-marker", key))
    assert deleted["status"] == "SUCCEEDED"
    assert _record(pipeline, key) is None
    assert _texts(pipeline, key) == ""


def test_a_page_upload_is_the_document_its_ticket_names(pipeline: Pipeline) -> None:
    # Given the page asked for an upload URL for a file with an odd name
    registry = pipeline.services.registry
    ticket = S3Uploads(client=pipeline.s3, bucket=DOCS_BUCKET, registry=registry).upload_url(
        "My Report (final) é.pdf", size=1000, collection="default", writer=ADMIN
    )

    # When the browser PUTs it and S3 sends the documented event
    pipeline.s3.put_object(Bucket=DOCS_BUCKET, Key=ticket.key, Body=_pdf("bulwarks"))
    execution = pipeline.run(_event(pipeline, "object-created", ticket.key))

    # Then the document the page was told about is the one indexed
    assert execution["status"] == "SUCCEEDED"
    record = registry.get(ticket.doc_id)
    assert record is not None and record.status == DocStatus.INDEXED
    assert record.source.endswith("My Report (final) é.pdf")


def test_sample_events_for_sam_local_invoke_are_the_documented_ones() -> None:
    # events/<function>.json (`sam local invoke -e`) carry the same S3 and Step Functions
    # events as the documentation pages, about the sample PDF.
    def sample(name: str) -> Any:
        return json.loads((EVENTS.parent / f"{name}.json").read_text())

    bucket, key = "docchat-documents-example", "reports/dmca.pdf"
    created = s3_event("object-created", bucket=bucket, key=key, sequencer="0062E99A88DC407460")
    deleted = s3_event(
        "object-deleted-delete-marker", bucket=bucket, key=key, sequencer="0062E99A88DC407470"
    )
    run = sample("register")["execution_id"]
    assert sample("register") == {"event": created, "execution_id": run}
    assert sample("remove") == {"event": deleted, "execution_id": run}
    assert {k: v for k, v in sample("mark_failed").items() if k not in ("error", "cause")} == {
        "event": created,
        "execution_id": run,
    }
    watchdog = execution_event("execution-timed-out", input_event=created, execution_arn=run)
    assert sample("watchdog") == watchdog


def test_an_object_copied_onto_itself_is_indexed_again_into_a_new_collection(
    pipeline: Pipeline,
) -> None:
    # Given a document indexed into the stack's index
    key = "kept/annual report.pdf"
    _upload(pipeline, key, _pdf("hawsers"))
    indexed = _record(pipeline, key)
    assert indexed is not None and indexed.status == DocStatus.INDEXED

    # When the index is another one (a new collection after CollectionGeneration changed, or
    # another embedding model) and `make reindex` copies the object onto itself
    from docchat.adapters.sqlite_index import SqliteIndex

    old = pipeline.services.index
    pipeline.services.index = SqliteIndex(
        old.path.parent / "new-collection.sqlite3",
        embedding_model=old.embedding_model,
        dimension=old.dimension,
    )
    try:
        pipeline.s3.copy_object(
            Bucket=DOCS_BUCKET,
            Key=key,
            CopySource={"Bucket": DOCS_BUCKET, "Key": key},
            MetadataDirective="REPLACE",
        )
        execution = pipeline.run(_event(pipeline, "object-created", key))

        # Then the same bytes are indexed again, into the new index
        assert execution["status"] == "SUCCEEDED", execution
        assert pipeline.states_entered(execution)[-1] == "Done"
        assert "hawsers" in _texts(pipeline, key)
        again = pipeline.run(_event(pipeline, "object-created", key))
        assert pipeline.states_entered(again)[-1] == "Unchanged"
    finally:
        pipeline.services.index.close()
        pipeline.services.index = old
