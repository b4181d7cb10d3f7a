"""Ingestion end to end through the real state machine definition and the real handlers."""

from __future__ import annotations

import json

from docchat.ingest.decision import doc_id_for
from docchat.models import DocStatus
from tests.functions.conftest import DOCS_BUCKET, Pipeline
from tests.pdfgen import make_pdf


def _pdf(topic: str, pages: int = 3) -> bytes:
    return make_pdf(
        [
            [("h1", f"{topic} chapter {n}")]
            + [
                ("body", f"Line {i} of page {n} explains {topic} in plain words.")
                for i in range(25)
            ]
            for n in range(1, pages + 1)
        ]
    )


def _doc_id(key: str) -> str:
    return doc_id_for(f"{DOCS_BUCKET}/{key}")


def test_upload_is_indexed_with_every_chunk(pipeline: Pipeline) -> None:
    execution = pipeline.upload("reports/bridges.pdf", _pdf("bridges"))

    assert execution["status"] == "SUCCEEDED", execution
    record = pipeline.services.registry.get(_doc_id("reports/bridges.pdf"))
    assert record is not None
    assert (record.status, record.pages, record.title) == (
        DocStatus.INDEXED,
        3,
        "bridges chapter 1",
    )
    index = pipeline.services.index
    assert record.chunks > 2  # more than one batch went through the Map
    assert index.count(record.doc_id) == record.chunks
    texts = [c.text for c in index.document_chunks(record.doc_id)]
    assert any("page 3 explains bridges" in t for t in texts)
    assert pipeline.calls["embed"] == pipeline.calls["index"] == -(-record.chunks // 2)


def test_same_bytes_again_do_no_work(pipeline: Pipeline) -> None:
    data = _pdf("tunnels")
    pipeline.upload("tunnels.pdf", data)
    before = dict(pipeline.calls)

    again = pipeline.upload("tunnels.pdf", data)

    assert again["status"] == "SUCCEEDED"
    assert pipeline.states_entered(again)[-1] == "Unchanged"
    assert {
        k: v - before.get(k, 0) for k, v in pipeline.calls.items() if v != before.get(k, 0)
    } == {"register": 1}


def test_changed_bytes_replace_the_old_chunks(pipeline: Pipeline) -> None:
    pipeline.upload("guide.pdf", _pdf("canals", pages=4))
    old = pipeline.services.registry.get(_doc_id("guide.pdf"))

    execution = pipeline.upload("guide.pdf", _pdf("harbours", pages=2))

    assert execution["status"] == "SUCCEEDED"
    new = pipeline.services.registry.get(_doc_id("guide.pdf"))
    assert new is not None and old is not None and new.version != old.version
    chunks = pipeline.services.index.document_chunks(new.doc_id)
    assert {c.version for c in chunks} == {new.version}
    assert len(chunks) == new.chunks
    assert not any("canals" in c.text for c in chunks)


def test_deleted_object_leaves_nothing_behind(pipeline: Pipeline) -> None:
    pipeline.upload("old.pdf", _pdf("ferries"))

    execution = pipeline.delete("old.pdf")

    assert execution["status"] == "SUCCEEDED"
    assert pipeline.services.registry.get(_doc_id("old.pdf")) is None
    assert pipeline.services.index.count(_doc_id("old.pdf")) == 0


def test_corrupt_pdf_fails_with_its_reason(pipeline: Pipeline) -> None:
    pipeline.upload("scan.pdf", _pdf("locks"))  # a good version first: its chunks must go too

    execution = pipeline.upload("scan.pdf", b"%PDF-1.7\n garbage that is not a PDF")

    assert execution["status"] == "FAILED"
    record = pipeline.services.registry.get(_doc_id("scan.pdf"))
    assert record is not None
    assert record.status == DocStatus.FAILED
    assert record.error_code == "malformed_pdf"
    assert "the PDF is damaged and cannot be read" in record.error
    assert pipeline.services.index.count(record.doc_id) == 0


def test_encrypted_pdf_reason_says_what_to_do(pipeline: Pipeline, shared_pdfs) -> None:  # type: ignore[no-untyped-def]
    data = (shared_pdfs / "pypdfium2-tests/tests/resources/encrypted.pdf").read_bytes()

    pipeline.upload("secret.pdf", data)

    record = pipeline.services.registry.get(_doc_id("secret.pdf"))
    assert record is not None and record.status == DocStatus.FAILED
    assert record.error == "the PDF is encrypted with a password: upload a copy without a password"


def test_bedrock_throttling_is_retried_and_completes(pipeline: Pipeline) -> None:
    pipeline.services.bedrock.throttle_next = 3

    execution = pipeline.upload("busy.pdf", _pdf("dams"))

    assert execution["status"] == "SUCCEEDED"
    record = pipeline.services.registry.get(_doc_id("busy.pdf"))
    assert record is not None and record.status == DocStatus.INDEXED
    assert pipeline.services.index.count(record.doc_id) == record.chunks
    history = pipeline.sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
    failed = [
        e for e in history if e["type"] == "LambdaFunctionFailed" or "TaskFailed" in e["type"]
    ]
    assert failed, "the throttled Embed call should have failed once and been retried"
    assert "EmbeddingThrottledError" in json.dumps(failed[0], default=str)


def test_same_event_twice_is_handled_once(pipeline: Pipeline) -> None:
    pipeline.s3.put_object(Bucket=DOCS_BUCKET, Key="twice.pdf", Body=_pdf("piers"))
    event = pipeline.event("Object Created", "twice.pdf")

    first = pipeline.run(event)
    second = pipeline.run(event)

    assert first["status"] == second["status"] == "SUCCEEDED"
    assert pipeline.states_entered(second)[-1] == "Unchanged"
    assert pipeline.calls["convert"] == 1


def test_late_delete_event_does_not_remove_a_newer_upload(pipeline: Pipeline) -> None:
    old_sequencer = pipeline.next_sequencer()  # the deletion happened first...
    pipeline.upload("late.pdf", _pdf("quays"))  # ...then a new upload, processed first

    execution = pipeline.run(pipeline.event("Object Deleted", "late.pdf", old_sequencer))

    assert execution["status"] == "SUCCEEDED"
    record = pipeline.services.registry.get(_doc_id("late.pdf"))
    assert record is not None and record.status == DocStatus.INDEXED
    assert pipeline.services.index.count(record.doc_id) == record.chunks


def test_old_upload_event_after_a_newer_one_is_skipped(pipeline: Pipeline) -> None:
    old_sequencer = pipeline.next_sequencer()
    pipeline.upload("order.pdf", _pdf("weirs"))
    calls = pipeline.calls["convert"]

    execution = pipeline.run(pipeline.event("Object Created", "order.pdf", old_sequencer))

    assert pipeline.states_entered(execution)[-1] == "Unchanged"
    assert pipeline.calls["convert"] == calls
