"""Which process is ingesting which document of a data directory, and how far it has got.

A claim is an exclusive `flock` on `<data dir>/ingesting/<doc_id>.lock`, held while one process
converts and embeds that document: a second `docchat ingest` of the same file waits for it (or
does other files first) instead of doing the same minutes of work again. The kernel drops the
lock of a process that dies, even by SIGKILL, so no claim outlives its process. Beside the lock,
`<doc_id>.json` says the document's stage and progress, for `docchat status` from another
terminal; it counts only while its lock is held.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from docchat.models import DEFAULT_COLLECTION, DocStatus, DocumentRecord

FOLDER = "ingesting"
#: At most this often a claim rewrites its progress (a stage's first step is always written).
REPORT_EVERY_S = 0.5


@dataclass(frozen=True)
class Work:
    """A document a live process is ingesting: its stage ("" before the first step) and how
    many of the stage's `total` steps are done."""

    doc_id: str
    source: str
    pid: int
    started: float
    stage: str = ""
    done: int = 0
    total: int = 0
    # Where the document goes: who may see it while it is ingested (`being_ingested`).
    collections: tuple[str, ...] = (DEFAULT_COLLECTION,)

    @property
    def record(self) -> DocumentRecord:
        """The record a new document has until it is indexed: its name, its collections and
        the status its stage stands for."""
        return DocumentRecord(
            doc_id=self.doc_id,
            source=self.source,
            title=Path(self.source).stem,
            status=_STAGE_STATUS.get(self.stage, DocStatus.CONVERTING),
            collections=list(self.collections),
        )


#: The status a document being ingested is in, by the stage its progress last named.
_STAGE_STATUS = {"notes": DocStatus.CHUNKING, "embed": DocStatus.EMBEDDING}


class Claim:
    """This process's claim on one document; `close` (or the process's end) releases it."""

    def __init__(self, folder: Path, handle: IO[bytes] | None, work: Work) -> None:
        self._folder = folder
        self._handle = handle
        self.work = work
        self._written = 0.0
        if handle is not None:
            self._write()

    def report(self, stage: str, done: int, total: int) -> None:
        """Record the document's progress, at most every REPORT_EVERY_S within a stage."""
        new_stage = stage != self.work.stage
        self.work = Work(**{**asdict(self.work), "stage": stage, "done": done, "total": total})
        if self._handle is None:
            return
        if new_stage or done >= total or time.monotonic() - self._written >= REPORT_EVERY_S:
            self._write()

    def close(self) -> None:
        if self._handle is None:
            return
        # Both files go while the lock is held; a waiter that then gets the lock of the
        # unlinked file sees it is gone and claims a new one (locked).
        with suppress(OSError):
            (self._folder / f"{self.work.doc_id}.json").unlink()
        with suppress(OSError):
            (self._folder / f"{self.work.doc_id}.lock").unlink()
        self._handle.close()
        self._handle = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self) -> None:
        target = self._folder / f"{self.work.doc_id}.json"
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        with suppress(OSError):  # progress is a courtesy: a full disk must not fail the file
            partial.write_text(json.dumps(asdict(self.work)))
            partial.replace(target)
        self._written = time.monotonic()


def claim(
    data_dir: Path, doc_id: str, *, source: str, collections: Sequence[str] = ()
) -> Claim | None:
    """This process's claim on `doc_id` (going to `collections`, the default one when none),
    or None when another process holds it. Where locks are unavailable (no fcntl, a directory
    this process cannot write) it is granted and guards nothing."""
    return _claimed(data_dir, doc_id, source=source, collections=collections, wait=False)


def claim_when_free(
    data_dir: Path, doc_id: str, *, source: str, collections: Sequence[str] = ()
) -> Claim:
    """This process's claim on `doc_id`, once the process that holds it (if one does) is done."""
    held = _claimed(data_dir, doc_id, source=source, collections=collections, wait=True)
    assert held is not None  # a blocking lock is granted or raises
    return held


def with_work(records: Sequence[DocumentRecord], works: Sequence[Work]) -> list[DocumentRecord]:
    """`records`, and a record for each new document of `works` (one `records` lacks: a new
    version keeps its old record until it is indexed). Take `works` from one `in_progress`
    read, so a claim made meanwhile cannot be listed without its progress."""
    known = {r.doc_id for r in records}
    return [*records, *(w.record for w in works if w.doc_id not in known)]


def _claimed(
    data_dir: Path, doc_id: str, *, source: str, collections: Sequence[str], wait: bool
) -> Claim | None:
    folder = data_dir / FOLDER
    try:
        handle = locked(folder / f"{doc_id}.lock", wait=wait)
    except OSError:
        handle = None  # a directory this process cannot write: nothing to guard
    else:
        if handle is None:
            return None
    work = Work(
        doc_id=doc_id,
        source=source,
        pid=os.getpid(),
        started=time.time(),
        collections=tuple(collections) or (DEFAULT_COLLECTION,),
    )
    return Claim(folder, handle, work)


def holder(data_dir: Path, doc_id: str) -> Work | None:
    """The work of the live process that holds `doc_id`'s claim, if one does."""
    return next((w for w in in_progress(data_dir) if w.doc_id == doc_id), None)


def in_progress(data_dir: Path) -> list[Work]:
    """The documents live processes are ingesting in `data_dir` now, oldest claim first."""
    folder = data_dir / FOLDER
    found = [work for path in sorted(folder.glob("*.json")) if (work := _live(path)) is not None]
    return sorted(found, key=lambda w: w.started)


def _live(path: Path) -> Work | None:
    """The work `path` describes, if the process that wrote it still holds its lock."""
    try:
        found = json.loads(path.read_text())
        kept = tuple(found.get("collections") or (DEFAULT_COLLECTION,))
        work = Work(**{**found, "collections": kept})
    except (OSError, ValueError, TypeError, AttributeError):
        return None  # being replaced, or not ours
    if not _held(path.with_suffix(".lock")):
        return None  # its process died before it could clean up
    return work


def _held(lock: Path) -> bool:
    try:
        import fcntl
    except ImportError:
        return True
    try:
        with open(lock, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return True
            return False
    except OSError:
        return False


def locked(lock: Path, *, wait: bool) -> IO[bytes] | None:
    """An open handle holding an exclusive lock on `lock`, the file at that path now; None when
    another process holds it (and not `wait`). OSError when the file cannot be made."""
    while True:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock, "ab")  # noqa: SIM115 - held by the Claim until it closes
        try:
            import fcntl
        except ImportError:
            return handle
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError:
            handle.close()
            return None
        try:
            if os.fstat(handle.fileno()).st_ino == os.stat(lock).st_ino:
                return handle
        except OSError:
            pass
        handle.close()  # the holder unlinked it as it finished: claim the new file
