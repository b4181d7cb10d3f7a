"""Remove: the current object was deleted; remove its chunks and its registry entry."""

from typing import Any

from docchat.ingest.steps import remove
from docchat.payloads import StepEvent, StepResult
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("documents_table", "opensearch_endpoint")


def _run(event: dict[str, Any]) -> StepResult:
    s = services().require(*REQUIRED, entry="the remove function")
    task = StepEvent.model_validate(event)
    return remove(
        task,
        objects=s.objects,
        index=s.index,
        registry=s.registry,
        artifacts_bucket=s.settings.artifacts_bucket,
    )


handler = step_handler("remove", _run)
