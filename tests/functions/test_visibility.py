"""OpenSearch Serverless makes writes searchable only after a delay, and has no refresh: a chunk
written just before Finalize, Remove or MarkFailed swept the document can show up after the
sweep. The state machine waits and sweeps again; these runs make writes visible only after the
first sweep, as the real collection may."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from docchat.errors import SearchIndexError
from docchat.ingest.decision import doc_id_for
from docchat.models import Chunk, DocStatus
from docchat.ports import Vectors
from tests.functions.conftest import DOCS_BUCKET, Pipeline
from tests.functions.test_ingest_pipeline import _pdf

DIMENSION = 256  # the pipeline fixture's embedding dimension


class LateIndex:
    """The real index behind a front where writes become visible only after the next sweep
    (finalize_document or delete_document) has finished."""

    def __init__(self, index: Any) -> None:
        self._index = index
        self.pending: list[tuple[Sequence[Chunk], Vectors]] = []
        self.fail_writes_after = -1  # writes accepted before a write fails; -1: never fails

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        if self.fail_writes_after == 0:
            raise SearchIndexError("OpenSearch refused a chunk (mapper_parsing_exception)")
        self.fail_writes_after -= 1
        self.pending.append((chunks, vectors))

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]:
        removed: dict[str, int] = self._index.finalize_document(doc_id, version)
        self._show()
        return removed

    def delete_document(self, doc_id: str) -> int:
        deleted: int = self._index.delete_document(doc_id) or 0
        self._show()
        return deleted

    def _show(self) -> None:
        pending, self.pending = self.pending, []
        for chunks, vectors in pending:
            self._index.write_chunks(chunks, vectors)


def _vectors(n: int) -> Vectors:
    return np.full((n, DIMENSION), 1 / np.sqrt(DIMENSION), dtype=np.float32)


def _doc_id(key: str) -> str:
    return doc_id_for(f"{DOCS_BUCKET}/{key}")


def test_old_version_chunks_visible_after_finalize_are_swept(pipeline: Pipeline) -> None:
    # Given version 1 indexed, and a late copy of its chunks still on its way to visibility
    pipeline.upload("late.pdf", _pdf("lanterns"))
    real = pipeline.services.index
    old = real.document_chunks(_doc_id("late.pdf"))
    late = LateIndex(real)
    late.pending.append((old, _vectors(len(old))))
    pipeline.services.index = late

    # When version 2 is ingested
    execution = pipeline.upload("late.pdf", _pdf("beacons"))

    # Then after the second sweep only version 2's chunks remain
    assert execution["status"] == "SUCCEEDED", execution
    record = pipeline.services.registry.get(_doc_id("late.pdf"))
    assert record is not None and record.status == DocStatus.INDEXED
    chunks = real.document_chunks(record.doc_id)
    assert {c.version for c in chunks} == {record.version}
    assert "SweepAfterFinalize" in pipeline.states_entered(execution)


def test_chunks_visible_after_remove_are_swept(pipeline: Pipeline) -> None:
    pipeline.upload("gone.pdf", _pdf("buoys"))
    real = pipeline.services.index
    written = real.document_chunks(_doc_id("gone.pdf"))
    late = LateIndex(real)
    late.pending.append((written, _vectors(len(written))))
    pipeline.services.index = late

    execution = pipeline.delete("gone.pdf")

    assert execution["status"] == "SUCCEEDED", execution
    assert real.count(_doc_id("gone.pdf")) == 0


def test_chunks_visible_after_mark_failed_are_swept(pipeline: Pipeline) -> None:
    # Given a run whose first batch is written (not yet visible) and whose next write fails
    real = pipeline.services.index
    late = LateIndex(real)
    late.fail_writes_after = 1
    pipeline.services.index = late

    execution = pipeline.upload("broken.pdf", _pdf("hawsers"))

    # Then the run fails with its reason, and no chunk of it stays searchable
    assert execution["status"] == "FAILED"
    record = pipeline.services.registry.get(_doc_id("broken.pdf"))
    assert record is not None and record.status == DocStatus.FAILED
    assert "mapper_parsing_exception" in record.error
    assert late.pending == []
    assert real.count(_doc_id("broken.pdf")) == 0
    assert "SweepAfterFailure" in pipeline.states_entered(execution)
