"""Chunk: pages -> batches of chunks with exact page spans."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import ChunkResult, ConvertResult
from docchat.pipeline import chunk


def _run(event: dict[str, Any]) -> ChunkResult:
    s = services()
    result = ConvertResult.model_validate(event)
    return chunk(result, objects=s.objects, registry=s.registry, settings=s.settings)


handler = step_handler("chunk", _run)
