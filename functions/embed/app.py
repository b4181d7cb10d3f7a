"""Embed: one batch of chunks -> vectors (Amazon Bedrock), stored beside the batch."""

from typing import Any

from docchat.ingest.steps import embed_batch
from docchat.payloads import BatchResult, BatchTask
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("artifacts_bucket",)


def _run(event: dict[str, Any]) -> BatchResult:
    s = services().require(*REQUIRED, entry="the embed function")
    task = BatchTask.model_validate(event)
    return embed_batch(task, objects=s.objects, embedder=s.embedder, settings=s.settings)


handler = step_handler("embed", _run)
