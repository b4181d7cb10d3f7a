"""Finalize: drop the old version's chunks and mark the document INDEXED."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import FinalizeTask, StepResult
from docchat.pipeline import finalize


def _run(event: dict[str, Any]) -> StepResult:
    s = services()
    return finalize(FinalizeTask.model_validate(event), index=s.index, registry=s.registry)


handler = step_handler("finalize", _run)
