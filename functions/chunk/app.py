"""Chunk: pages -> batches of chunks with exact page spans."""

from typing import Any

from docchat.ingest.steps import chunk
from docchat.payloads import ChunkResult, ConvertResult
from docchat.processes import ChunkSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> ChunkResult:
    s = services("chunk")
    settings = s.view(ChunkSettings)
    result = ConvertResult.model_validate(event)
    return chunk(
        result,
        objects=s.objects,
        registry=s.registry,
        settings=settings,
        notes_model=s.notes_model,
    )


handler = step_handler("chunk", _run)
