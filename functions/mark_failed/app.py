"""MarkFailed: record why ingestion failed and drop the document's stale chunks."""

from typing import Any

from docchat.ingest.failures import mark_failed
from docchat.payloads import FailureTask, StepResult
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("documents_table", "opensearch_endpoint", "artifacts_bucket")


def _run(event: dict[str, Any]) -> StepResult:
    s = services().require(*REQUIRED, entry="the mark_failed function")
    return mark_failed(
        FailureTask.model_validate(event),
        index=s.index,
        registry=s.registry,
        objects=s.objects,
        artifacts_bucket=s.settings.artifacts_bucket,
    )


handler = step_handler("mark_failed", _run)
