"""Sync: the stack's sources (web sites, Graph drives, Confluence spaces) into the documents
bucket, on the schedule template.yaml gives it; the pipeline ingests what it writes."""

from typing import Any

from docchat.payloads import ScheduledSync
from docchat.processes import SyncSettings
from docchat.sources.stack_sync import StackSyncer, SyncRun
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import logger, step_handler


def _run(event: dict[str, Any]) -> SyncRun:
    s = services("sync")
    settings = s.view(SyncSettings)
    task = ScheduledSync.model_validate(event)
    syncer = StackSyncer(
        objects=s.objects,
        secrets=s.secrets,
        documents_bucket=settings.documents_bucket,
        artifacts_bucket=settings.artifacts_bucket,
    )
    run = syncer.sync(task.source)
    if run.left_to_another:
        logger.info("sync skipped", extra={"reason": run.left_to_another})
    for done in run.sources:
        counts = done.model_dump(mode="json", exclude={"name", "at", "skip_note"})
        logger.info("source synced", extra={"source": done.name, **counts})
    for gone in run.removed_sources:
        counts = gone.model_dump(mode="json", exclude={"name"})
        logger.info("source removed", extra={"source": gone.name, **counts})
    return run


handler = step_handler("sync", _run)
