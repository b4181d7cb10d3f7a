"""Index: one embedded batch -> the search index."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import BatchResult, BatchTask
from docchat.pipeline import index_batch


def _run(event: dict[str, Any]) -> BatchResult:
    s = services()
    task = BatchTask.model_validate(event)
    return index_batch(
        task,
        objects=s.objects,
        index=s.index,
        settings=s.settings,
        model_id=s.embedder.model_id,
    )


handler = step_handler("index", _run)
