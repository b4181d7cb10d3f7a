"""The one decision the CLI, the local server's uploads and the cloud's Register share."""

from __future__ import annotations

import pytest

from docchat.ingest.decision import decide
from docchat.models import DocStatus, DocumentRecord

V1, V2 = "a" * 64, "b" * 64


def _record(status: DocStatus, version: str = V1, revision: int = 1) -> DocumentRecord:
    return DocumentRecord(
        doc_id="report-1", source="/d/report.pdf", version=version, status=status, revision=revision
    )


@pytest.mark.parametrize(
    ("current", "kwargs", "outcome", "revision"),
    [
        (None, {}, "ingest", 1),  # a new document
        (_record(DocStatus.INDEXED), {}, "unchanged", 1),  # the same bytes, indexed
        (_record(DocStatus.INDEXED, revision=3), {"indexed_here": False}, "ingest", 3),
        (_record(DocStatus.FAILED), {}, "ingest", 1),  # a failed version is tried again
        (_record(DocStatus.EMBEDDING), {"running": True}, "unchanged", 1),  # a run is at it
        (_record(DocStatus.EMBEDDING), {}, "ingest", 1),  # a stopped run's version
        (_record(DocStatus.INDEXED, V2, revision=2), {}, "ingest", 3),  # new bytes, next revision
        (None, {"twin": "other-2"}, "duplicate", 1),  # another document holds these bytes
        (_record(DocStatus.INDEXED, V2), {"twin": "other-2"}, "duplicate", 1),
        (_record(DocStatus.FAILED), {"twin": "report-1"}, "ingest", 1),  # its own twin
    ],
)
def test_decision_for_each_state(
    current: DocumentRecord | None, kwargs: dict[str, object], outcome: str, revision: int
) -> None:
    decision = decide(current, V1, **kwargs)  # type: ignore[arg-type]

    assert decision.outcome == outcome
    if outcome == "ingest":
        assert decision.revision == revision
    if outcome == "duplicate":
        assert decision.twin == kwargs["twin"]
    if outcome == "unchanged":
        assert decision.reason.startswith("unchanged")
