"""Chunk: pages -> batches of chunks with exact page spans."""

from typing import Any

from docchat.ingest.steps import chunk
from docchat.payloads import ChunkResult, ConvertResult
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("documents_table", "artifacts_bucket")


def _run(event: dict[str, Any]) -> ChunkResult:
    s = services().require(*REQUIRED, entry="the chunk function")
    result = ConvertResult.model_validate(event)
    return chunk(
        result,
        objects=s.objects,
        registry=s.registry,
        settings=s.settings,
        notes_model=s.notes_model,
    )


handler = step_handler("chunk", _run)
