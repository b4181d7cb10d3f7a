"""Claims on the documents of a data directory (docchat.ingest.claims): one process at a time
converts and embeds a document, and a killed process leaves no claim behind (issue 44)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from docchat.ingest import claims

HOLD = """
import sys, time
from pathlib import Path
from docchat.ingest import claims
held = claims.claim(Path(sys.argv[1]), "doc-1", source="/files/report.pdf")
held.report("convert", 12, 190)
print("held", flush=True)
time.sleep(120)
"""


def _holder(data_dir: Path) -> subprocess.Popen[str]:
    """Another process holding doc-1's claim, 12 of 190 pages converted."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    return process


def test_claims_a_claimed_document_is_refused_and_listed_with_its_progress(
    tmp_path: Path,
) -> None:
    other = _holder(tmp_path)
    try:
        assert claims.claim(tmp_path, "doc-1", source="/files/report.pdf") is None
        [work] = claims.in_progress(tmp_path)
        assert (work.doc_id, work.source, work.pid) == ("doc-1", "/files/report.pdf", other.pid)
        assert (work.stage, work.done, work.total) == ("convert", 12, 190)
        # Another document is free
        with claims.claim(tmp_path, "doc-2", source="/files/other.pdf") as held:
            assert held is not None
    finally:
        other.kill()
        other.wait()


def test_claims_a_killed_process_leaves_no_claim(tmp_path: Path) -> None:
    # Given a process that holds a claim, killed (SIGKILL: nothing of it cleans up)
    other = _holder(tmp_path)
    other.kill()
    other.wait()

    # Then its document is not listed as in progress, and the next claim is granted
    assert claims.in_progress(tmp_path) == []
    held = claims.claim(tmp_path, "doc-1", source="/files/report.pdf")
    assert held is not None
    held.close()
    assert list((tmp_path / claims.FOLDER).iterdir()) == []


def test_claims_a_waiting_claim_is_granted_when_the_holder_is_done(tmp_path: Path) -> None:
    first = claims.claim(tmp_path, "doc-1", source="/files/report.pdf")
    assert first is not None
    granted: list[claims.Claim] = []
    waiter = threading.Thread(
        target=lambda: granted.append(
            claims.claim_when_free(tmp_path, "doc-1", source="/files/report.pdf")
        )
    )
    waiter.start()
    time.sleep(0.3)
    assert granted == []  # still held

    first.close()  # the holder unlinks its lock file as it lets go
    waiter.join(10)

    assert len(granted) == 1
    assert [w.doc_id for w in claims.in_progress(tmp_path)] == ["doc-1"]
    assert claims.claim(tmp_path, "doc-1", source="/files/report.pdf") is None
    granted[0].close()
