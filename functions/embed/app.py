"""Embed: one batch of chunks -> vectors (Amazon Bedrock), stored beside the batch."""

from typing import Any

from docchat.ingest.steps import embed_batch
from docchat.payloads import BatchResult, BatchTask
from docchat.processes import EmbedSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> BatchResult:
    s = services("embed")
    settings = s.view(EmbedSettings)
    task = BatchTask.model_validate(event)
    return embed_batch(task, objects=s.objects, embedder=s.embedder, settings=settings)


handler = step_handler("embed", _run)
