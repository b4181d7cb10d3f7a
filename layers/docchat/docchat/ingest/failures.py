"""The cloud ingestion's failure path: MarkFailed, which records why a run failed in words a user
can act on, and the watchdog, which does the same for a run that ended without reaching it.
The registry's conditional writes keep a failure from overwriting a newer run's document."""

from __future__ import annotations

import json

from docchat.errors import StaleWriteError, code_for_name
from docchat.ingest.decision import doc_id_for, newer, normalized_sequencer
from docchat.ingest.pagetext import drop_pages
from docchat.models import DocStatus, RegistryEntry
from docchat.payloads import (
    ExecutionFailure,
    ExecutionStatusEvent,
    FailureTask,
    S3Event,
    StepResult,
)
from docchat.ports import ChunkStore, Executions, Objects, Registry

OBJECT_DELETED = "Object Deleted"
#: error_code of a document whose object is gone but whose chunks could not be removed.
REMOVE_FAILED = "remove_failed"


def mark_failed(
    task: FailureTask,
    *,
    index: ChunkStore,
    registry: Registry,
    objects: Objects,
    artifacts_bucket: str,
) -> StepResult:
    """Record why a run failed, in words a user can act on, and drop the document's chunks
    and the page text of its other versions (they belong to a version of the file that no
    longer exists).

    Safe to run again for the same run (a retry, the sweep after the search index's visibility
    delay, the watchdog): as long as this run's failure is what the registry holds, the chunks
    are deleted again. A failed deletion run only records why (`_record_failed_removal`)."""
    doc_id = doc_id_for(task.event.object_ref().source)
    if task.event.detail_type == OBJECT_DELETED:
        return _record_failed_removal(task, doc_id=doc_id, registry=registry)
    code, reason = failure_reason(task.error, task.cause)
    recorded = registry.fail_if_running(doc_id, task.execution_id, code=code, reason=reason)
    if not recorded and not _failed_by(registry.get(doc_id), task.execution_id):
        return StepResult(doc_id=doc_id, status="unchanged", detail="another run owns it")
    index.delete_document(doc_id)
    failed = registry.get(doc_id)
    drop_pages(objects, artifacts_bucket, doc_id, keep=failed.version if failed else "")
    return StepResult(doc_id=doc_id, status=DocStatus.FAILED.value, detail=reason)


def stopped_run(
    event: ExecutionStatusEvent,
    *,
    executions: Executions,
    index: ChunkStore,
    registry: Registry,
    objects: Objects,
    artifacts_bucket: str,
) -> StepResult:
    """The watchdog: an ingestion run failed, timed out or was stopped without MarkFailed
    running (a state-size limit, a timeout of the whole run, a stop by hand). Its document is
    marked FAILED with the error that ended the run, which Step Functions is asked for when
    the event does not carry it."""
    detail = event.detail
    failure = ExecutionFailure(
        input=detail.input or "", error=detail.error or "", cause=detail.cause or ""
    )
    if not failure.input or (detail.status == "FAILED" and not failure.error):
        failure = executions.failure(detail.executionArn)
    task = FailureTask(
        event=S3Event.model_validate_json(failure.input),
        execution_id=detail.executionArn,
        error=failure.error if detail.status == "FAILED" and failure.error else detail.status,
        cause=failure.cause,
    )
    return mark_failed(
        task, index=index, registry=registry, objects=objects, artifacts_bucket=artifacts_bucket
    )


def _failed_by(entry: RegistryEntry | None, execution_id: str) -> bool:
    return (
        entry is not None
        and entry.execution_id == execution_id
        and entry.status == DocStatus.FAILED
    )


def _record_failed_removal(task: FailureTask, *, doc_id: str, registry: Registry) -> StepResult:
    """The object is gone but removing its chunks failed: say so on the document, which also
    takes it out of answers (only INDEXED versions are searched)."""
    current = registry.get(doc_id)
    sequencer = normalized_sequencer(task.event.object_ref().sequencer)
    if current is None or newer(current, sequencer):
        return StepResult(doc_id=doc_id, status="unchanged", detail="nothing of it is registered")
    if current.error_code == REMOVE_FAILED:
        return StepResult(doc_id=doc_id, status="unchanged", detail="already recorded")
    _, detail = failure_reason(task.error, task.cause)
    reason = (
        f"the file was deleted, but removing its passages from the search index failed "
        f"({detail}): upload the file again and delete it to retry"
    )
    try:
        registry.update(
            doc_id,
            current.version,
            status=DocStatus.FAILED.value,
            error_code=REMOVE_FAILED,
            error=reason,
        )
    except StaleWriteError:
        return StepResult(doc_id=doc_id, status="unchanged", detail="a newer upload took over")
    return StepResult(doc_id=doc_id, status=DocStatus.FAILED.value, detail=reason)


_PLAIN_REASONS = {
    "States.Timeout": "a step ran out of time: split the document into smaller PDFs",
    "Sandbox.Timedout": "a step ran out of time: split the document into smaller PDFs",
    "Runtime.OutOfMemory": "a step ran out of memory: split the document into smaller PDFs",
    # Lambda reports a sandbox killed for lack of memory (or by its timeout) as one of these.
    "Runtime.ExitError": "a step was stopped, most often for lack of memory: split the document "
    "into smaller PDFs",
    "Lambda.Unknown": "a step was stopped, most often for lack of memory or time: split the "
    "document into smaller PDFs",
    "States.DataLimitExceeded": (
        "the document has more parts than one ingestion run can pass between its steps: "
        "split it into smaller files"
    ),
    "TIMED_OUT": "ingestion ran out of time and was stopped: upload the file again",
    "ABORTED": "ingestion was stopped by hand: upload the file again",
    "FAILED": "ingestion failed unexpectedly: upload the file again",
}


def failure_reason(error: str, cause: str) -> tuple[str, str]:
    """(code, message) for a Step Functions error name and its cause."""
    message = ""
    try:
        parsed = json.loads(cause) if cause else {}
        if isinstance(parsed, dict):
            message = str(parsed.get("errorMessage", ""))
    except json.JSONDecodeError:
        message = cause
    code = code_for_name(error)
    if code is not None:
        return code, message or error
    if error in _PLAIN_REASONS:
        return "stopped", _PLAIN_REASONS[error]
    return "internal", f"{error}: {message}" if message else error


__all__ = ["failure_reason", "mark_failed", "stopped_run"]
