"""Faults injected into real pipeline runs: afterwards the index holds exactly the current
version's chunks (nothing lost, nothing twice) and the registry tells the truth."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from docchat.errors import SearchIndexError, SearchIndexNotReadyError, SearchIndexUnavailableError
from docchat.ingest.decision import doc_id_for
from docchat.models import Chunk, DocStatus
from tests.functions.conftest import DOCS_BUCKET, Pipeline
from tests.functions.test_ingest_pipeline import _pdf


class FlakyIndex:
    """The real index behind a front that fails the first calls of some methods with 429s."""

    def __init__(self, index: Any, failures: dict[str, int]) -> None:
        self._index = index
        self.failures = Counter(failures)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._index, name)
        if name not in self.failures:
            return method

        def flaky(*args: Any, **kwargs: Any) -> Any:
            if self.failures[name] > 0:
                self.failures[name] -= 1
                raise SearchIndexUnavailableError("OpenSearch answered 429 Too Many Requests")
            return method(*args, **kwargs)

        return flaky


def _assert_exactly_current(pipeline: Pipeline, key: str) -> None:
    record = pipeline.services.registry.get(doc_id_for(f"{DOCS_BUCKET}/{key}"))
    assert record is not None and record.status == DocStatus.INDEXED
    chunks: Sequence[Chunk] = pipeline.services.index.document_chunks(record.doc_id)
    ids = [c.chunk_id for c in chunks]
    assert len(ids) == len(set(ids)) == record.chunks  # nothing lost, nothing twice
    assert {c.version for c in chunks} == {record.version}


@pytest.mark.parametrize(
    "failures",
    [{"write_chunks": 2}, {"finalize_document": 1}, {"write_chunks": 1, "finalize_document": 1}],
    ids=["bulk-429", "finalize-429", "both"],
)
def test_search_index_unavailable_is_retried(pipeline: Pipeline, failures: dict[str, int]) -> None:
    real = pipeline.services.index
    pipeline.services.index = FlakyIndex(real, failures)

    execution = pipeline.upload("flaky.pdf", _pdf("sluices"))
    pipeline.services.index = real

    assert execution["status"] == "SUCCEEDED"
    _assert_exactly_current(pipeline, "flaky.pdf")


@pytest.mark.parametrize("step", ["convert", "chunk", "embed", "index", "finalize"])
def test_lambda_killed_after_its_work_is_retried_without_duplicates(
    pipeline: Pipeline, step: str
) -> None:
    pipeline.upload("killed.pdf", _pdf("moorings", pages=2))  # an older version to replace
    pipeline.kills[step] = 1

    execution = pipeline.upload("killed.pdf", _pdf("anchors", pages=3))

    assert execution["status"] == "SUCCEEDED"
    assert pipeline.calls[step] >= 2
    _assert_exactly_current(pipeline, "killed.pdf")
    texts = " ".join(
        c.text
        for c in pipeline.services.index.document_chunks(doc_id_for(f"{DOCS_BUCKET}/killed.pdf"))
    )
    assert "anchors" in texts and "moorings" not in texts


def test_bedrock_server_errors_are_retried(pipeline: Pipeline) -> None:
    fake = pipeline.services.bedrock
    original = fake.invoke_model
    failures = {"left": 2}

    def unavailable(**kwargs: Any) -> Any:
        if failures["left"] > 0:
            failures["left"] -= 1
            from botocore.exceptions import ClientError

            raise ClientError(
                {
                    "Error": {"Code": "ServiceUnavailableException", "Message": "try later"},
                    "ResponseMetadata": {"HTTPStatusCode": 503},
                },
                "InvokeModel",
            )
        return original(**kwargs)

    fake.invoke_model = unavailable

    execution = pipeline.upload("busy5xx.pdf", _pdf("locks"))

    assert execution["status"] == "SUCCEEDED"
    _assert_exactly_current(pipeline, "busy5xx.pdf")


def test_failed_removal_is_recorded_on_the_document(pipeline: Pipeline) -> None:
    # Given an indexed document whose chunks cannot be deleted (a non-retryable refusal)
    pipeline.upload("stubborn.pdf", _pdf("bitts"))
    real = pipeline.services.index

    class Refusing:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def delete_document(self, doc_id: str) -> None:
            raise SearchIndexError("OpenSearch denied access (403) while deleting chunks")

    pipeline.services.index = Refusing()

    # When its object is deleted
    execution = pipeline.delete("stubborn.pdf")
    pipeline.services.index = real

    # Then the run fails, and the document says why instead of staying INDEXED
    assert execution["status"] == "FAILED"
    assert "RecordRemoveFailure" in pipeline.states_entered(execution)
    record = pipeline.services.registry.get(doc_id_for(f"{DOCS_BUCKET}/stubborn.pdf"))
    assert record is not None
    assert (record.status, record.error_code) == (DocStatus.FAILED, "remove_failed")
    assert "OpenSearch denied access (403)" in record.error
    assert record.error.endswith("upload the file again and delete it to retry")


def test_first_writes_to_a_collection_whose_policy_is_not_in_effect_are_retried(
    pipeline: Pipeline,
) -> None:
    # Given a new collection whose data access policy refuses the first writes (403), as
    # OpenSearch Serverless does for minutes after the stack made the policy
    real = pipeline.services.index
    refusals = [2]

    class NotReady:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def write_chunks(self, chunks: Any, vectors: Any) -> None:
            if refusals[0] > 0:
                refusals[0] -= 1
                raise SearchIndexNotReadyError("OpenSearch denied access (403) while indexing")
            real.write_chunks(chunks, vectors)

    pipeline.services.index = NotReady()

    # When a document is uploaded
    execution = pipeline.upload("first.pdf", _pdf("capstans"))
    pipeline.services.index = real

    # Then the Index step waited it out and the document is indexed
    assert execution["status"] == "SUCCEEDED", execution
    assert refusals == [0]
    record = pipeline.services.registry.get(doc_id_for(f"{DOCS_BUCKET}/first.pdf"))
    assert record is not None and record.status == DocStatus.INDEXED
