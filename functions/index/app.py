"""Index: one embedded batch -> the search index."""

from typing import Any

from docchat.ingest.steps import index_batch
from docchat.payloads import BatchResult, BatchTask
from docchat.processes import IndexSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> BatchResult:
    s = services("index")
    settings = s.view(IndexSettings)
    task = BatchTask.model_validate(event)
    return index_batch(
        task,
        objects=s.objects,
        index=s.index,
        settings=settings,
        model_id=s.embedder.model_id,
    )


handler = step_handler("index", _run)
