"""Embed: one batch of chunks -> vectors (Amazon Bedrock), stored beside the batch."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import BatchResult, BatchTask
from docchat.pipeline import embed_batch


def _run(event: dict[str, Any]) -> BatchResult:
    s = services()
    task = BatchTask.model_validate(event)
    return embed_batch(task, objects=s.objects, embedder=s.embedder, settings=s.settings)


handler = step_handler("embed", _run)
