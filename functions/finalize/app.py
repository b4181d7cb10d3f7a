"""Finalize: drop the old version's chunks and mark the document INDEXED."""

from typing import Any

from docchat.ingest.steps import finalize
from docchat.payloads import FinalizeTask, StepResult
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("documents_table", "opensearch_endpoint", "artifacts_bucket")


def _run(event: dict[str, Any]) -> StepResult:
    s = services().require(*REQUIRED, entry="the finalize function")
    return finalize(
        FinalizeTask.model_validate(event),
        index=s.index,
        registry=s.registry,
        objects=s.objects,
        artifacts_bucket=s.settings.artifacts_bucket,
    )


handler = step_handler("finalize", _run)
