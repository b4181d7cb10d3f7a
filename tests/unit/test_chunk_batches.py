"""Chunk's output stays within what a Step Functions state may hold, whatever ChunksPerBatch is."""

from __future__ import annotations

import json
from typing import Any

from docchat.config import Settings
from docchat.ingest.steps import MAX_BATCHES, chunk
from docchat.models import Page
from docchat.payloads import ConvertResult, DocRef
from docchat.processes import ChunkSettings

STATE_LIMIT = (
    256 * 1024
)  # bytes, https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html


class _Objects:
    def __init__(self, pages: list[Page]) -> None:
        self.stored: dict[str, Any] = {"pages-key": {"title": "t", "pages": pages}}

    def read_json(self, bucket: str, key: str) -> object:
        value = self.stored[key]
        return {"title": "t", "pages": [p.model_dump() for p in value["pages"]]}

    def write_json(self, bucket: str, key: str, value: object) -> None:
        self.stored[key] = value


class _Registry:
    def update(self, doc_id: str, version: str, **fields: object) -> None:
        pass


def _chunk_settings(**overrides: object) -> ChunkSettings:
    """The chunk function's settings, as its view has them."""
    settings = Settings.from_env(
        {}, chunk_overlap=0, documents_table="t", artifacts_bucket="artifacts", **overrides
    )
    return ChunkSettings.of(settings, reader="the chunk function")


def test_chunk_batches_a_long_document_under_the_state_limit_with_one_chunk_per_batch() -> None:
    # Given a long document, the longest doc id docchat makes, and ChunksPerBatch=1
    words = " ".join(f"word{n}" for n in range(170))
    pages = [Page(number=n, markdown=f"{words} {n}.", chars=len(words)) for n in range(1, 3001)]
    doc = DocRef(
        doc_id="a" * 40 + "-12345678",
        version="f" * 64,
        bucket="docchat-documents-example",
        key="reports/long.pdf",
        execution_id="arn:aws:states:us-east-1:123456789012:execution:docchat-ingest:run",
    )
    settings = _chunk_settings(chunks_per_batch=1, chunk_size=500)

    # When Chunk splits it
    result = chunk(
        ConvertResult(doc=doc, title="t", pages=len(pages), pages_key="pages-key"),
        objects=_Objects(pages),  # type: ignore[arg-type]
        registry=_Registry(),  # type: ignore[arg-type]
        settings=settings,
    )

    # Then every chunk is in a batch, the batches are at most MAX_BATCHES, and Chunk's output
    # (what the state holds next) stays well under 256 KiB
    assert result.chunks > 3 * MAX_BATCHES
    assert len(result.batches) <= MAX_BATCHES
    assert len(json.dumps(result.model_dump(mode="json")).encode()) < STATE_LIMIT // 2


def test_chunk_keeps_the_batch_size_asked_for_when_it_fits() -> None:
    pages = [Page(number=1, markdown=" ".join(f"w{n}" for n in range(400)), chars=1600)]
    doc = DocRef(doc_id="d-1", version="v", bucket="b", key="k.pdf")
    settings = _chunk_settings(chunks_per_batch=2, chunk_size=200)

    result = chunk(
        ConvertResult(doc=doc, title="t", pages=1, pages_key="pages-key"),
        objects=_Objects(pages),  # type: ignore[arg-type]
        registry=_Registry(),  # type: ignore[arg-type]
        settings=settings,
    )

    assert len(result.batches) == -(-result.chunks // 2)
