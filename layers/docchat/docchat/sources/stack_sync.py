"""Syncing the stack's sources into the documents bucket (the sync function): each page or file a
source's walk fetches (the same web crawl, Graph delta feed, space listing or Google Drive
changes a local sync reads)
is written as an object under the key that places it in the source's collection
(`collections/<collection>/sources/<name>/...`, or `sources/<name>/...` in the default one); a
page gone from the source has its object deleted. S3's events then drive the ingestion pipeline
and Remove, as for any upload: the pipeline, collections and deletion stay the one path.

What a page was (its validators, its content hash, its object's key) is kept in the artifacts
bucket beside the source's definition, so a sync with nothing changed writes nothing. A source
that cannot be synced (its definition, its secret, its site) records why in its last run and the
other sources are synced all the same. The secret is read when its source's sync starts, handed
only to the walker, and taken out of every reason kept or returned."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

import requests
from pydantic import BaseModel

from docchat.errors import ObjectMissingError, SecretError, SourceError
from docchat.ingest.decision import doc_id_for
from docchat.ingest.synced import LONGEST_URL, SOURCE_URL, is_synced_key
from docchat.models import COLLECTIONS_PREFIX
from docchat.ports import Secrets, SyncedObjects
from docchat.sources.confluence import SpacePages
from docchat.sources.crawl import Crawler, Fetched
from docchat.sources.gdrive import DriveChanges
from docchat.sources.graph import DriveDelta
from docchat.sources.lease import Busy, release_lease, take_lease
from docchat.sources.settle import Walk, settle
from docchat.sources.stack import (
    DEFINITIONS,
    STACK_SECRET,
    AnyStackSource,
    StackSource,
    StackState,
    StoredObject,
    defined_names,
    definition_key,
    parsed_definition,
    read_state,
    state_key,
    undefined_names,
    write_state,
)
from docchat.sources.store import (
    ConfluenceSource,
    GoogleDriveSource,
    GraphSource,
    PageState,
    SyncReport,
    WebSource,
    now,
)


class SourceSynced(SyncReport):
    """One source's run, as the sync function returns it."""

    name: str


class SourceRemoved(BaseModel):
    """A source whose definition was deleted: how many of the objects its syncs wrote were
    deleted (the pipeline's Remove takes them out of the index), and why not all, if not."""

    name: str
    removed: int = 0
    last_failure: str = ""


class SyncRun(BaseModel):
    """What one invocation of the sync function did, source by source; or, when another run
    holds the sources (docchat.sources.lease), nothing, and `left_to_another` says so."""

    sources: list[SourceSynced]
    removed_sources: list[SourceRemoved] = []
    left_to_another: str = ""


@dataclass
class _Run:
    """One source's sync into the bucket as it goes (a `settle.Settling`)."""

    syncer: StackSyncer
    defined: StackSource
    state: StackState
    report: SyncReport
    secret: str = ""
    reached: set[str] = field(default_factory=set)

    def holds(self, url: str) -> bool:
        return url in self.state.objects

    def keep(self, page: Fetched) -> None:
        self.syncer.store(page, self)

    def unchanged(self, url: str) -> None:
        self.report.unchanged += 1

    def remove(self, url: str, why: str) -> None:
        self.syncer.remove(url, self)

    def forget(self, url: str) -> None:
        self.state.pages.pop(url, None)

    def failed(self, url: str, reason: str) -> None:
        self.fail(reason)

    def fail(self, reason: str) -> None:
        self.report.failed += 1
        self.report.last_failure = self.scrubbed(reason)

    def skipped(self, url: str, reason: str) -> None:
        self.report.skipped += 1
        self.report.skip_note = self.scrubbed(f"{url}: {reason}")

    def scrubbed(self, text: str) -> str:
        said = self.defined.said(text)
        return said.replace(self.secret, "***") if self.secret else said


@dataclass(frozen=True)
class StackSyncer:
    """What the stack's syncs read and write with."""

    objects: SyncedObjects
    secrets: Secrets
    documents_bucket: str
    artifacts_bucket: str
    session: requests.Session | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time

    def sync(self, only: str = "") -> SyncRun:
        """Every defined source synced (or only the one called `only`), one after another;
        then, unless only one was asked for, each source whose definition is gone removed.
        Nothing, while another run holds the sources."""
        taken = take_lease(self.objects, self.artifacts_bucket, now=self.clock())
        if isinstance(taken, Busy):
            return SyncRun(sources=[], left_to_another=taken.said)
        try:
            return self._sync(only)
        finally:
            release_lease(self.objects, self.artifacts_bucket, taken)

    def _sync(self, only: str) -> SyncRun:
        keys = self.objects.keys(self.artifacts_bucket, DEFINITIONS)
        names = defined_names(keys)
        if only:
            if only not in names:
                known = ", ".join(names) or "none yet"
                raise SourceError(
                    f"there is no source called {only!r} on the stack (sources: {known}): "
                    f"write its definition to s3://{self.artifacts_bucket}/{definition_key(only)}"
                )
            names = [only]
        synced = [self.sync_source(name) for name in names]
        gone = [] if only else [self.remove_source(name) for name in undefined_names(keys)]
        return SyncRun(sources=synced, removed_sources=gone)

    def remove_source(self, name: str) -> SourceRemoved:
        """The objects the syncs of `name` (whose definition is gone) wrote, as its state
        records them, deleted from the documents bucket, then its state; what could not be
        deleted stays in its state for the next run."""
        state = read_state(self.objects, self.artifacts_bucket, name)
        done = SourceRemoved(name=name)
        try:
            for url, known in list(state.objects.items()):
                if is_synced_key(known.key):  # never anything but where the sync writes
                    self.objects.delete(self.documents_bucket, known.key)
                    done.removed += 1
                del state.objects[url]
            self.objects.delete(self.artifacts_bucket, state_key(name))
        except Exception as exc:  # kept as the reason; the next run deletes the rest
            done.last_failure = f"the removal stopped: {type(exc).__name__}: {exc}"
            write_state(self.objects, self.artifacts_bucket, name, state)
        return done

    def sync_source(self, name: str) -> SourceSynced:
        """The source `name` synced; its state (what was done, however it ended) is saved."""
        state = read_state(self.objects, self.artifacts_bucket, name)
        report = SyncReport(at=now())
        try:
            data = self.objects.read(self.artifacts_bucket, definition_key(name))
            defined = parsed_definition(name, data)
            secret = self.secrets.secret(defined.secret) if defined.secret else ""
        except (SourceError, SecretError, ObjectMissingError) as exc:
            report.failed, report.last_failure = 1, str(exc)
        else:
            run = _Run(self, defined, state, report, secret)
            try:
                self._walked(run)
            except Exception as exc:  # kept as the run's reason; the other sources go on
                run.fail(f"the sync stopped: {type(exc).__name__}: {exc}")
        state.last_sync = report
        write_state(self.objects, self.artifacts_bucket, name, state)
        return SourceSynced(name=name, **report.model_dump())

    def _walked(self, run: _Run) -> None:
        state, source = run.state, run.defined.source
        prefix = key_prefix(source)
        if state.prefix != prefix:  # a new collection: every page is written there again
            state.pages = {url: PageState(url=url, doc_id="") for url in state.pages}
            state.cursor, state.prefix = "", prefix
        self._refetch_lost(run, prefix)
        walk = self._walk(run)
        for outcome in walk.outcomes():
            settle(outcome, run)
        if walk.complete:
            for url in [u for u in state.objects if u not in run.reached]:
                self.remove(url, run)
        if not run.report.failed:
            state.cursor = walk.cursor

    def _refetch_lost(self, run: _Run, prefix: str) -> None:
        """Pages whose objects are gone from the documents bucket (a document deleted through
        the API) are fetched again, as a local sync fetches a document removed from its index:
        their validators are dropped, and a drive's walk starts over (its changes since the
        last sync would not list them; unchanged files are still not downloaded)."""
        state = run.state
        if not state.objects:
            return
        present = set(self.objects.keys(self.documents_bucket, prefix))
        lost = [url for url, stored in state.objects.items() if stored.key not in present]
        for url in lost:
            del state.objects[url]
            if url in state.pages:
                state.pages[url] = state.pages[url].unvalidated()
        if lost:
            state.cursor = ""

    def _walk(self, run: _Run) -> Walk:
        session = self.session or requests.Session()
        pages, cursor, source = run.state.pages, run.state.cursor, run.defined.source
        environ = {STACK_SECRET: run.secret}
        match source:
            case WebSource():
                return Crawler(source, pages, session=session, sleep=self.sleep)
            case GraphSource():
                return DriveDelta(
                    source, pages, cursor, session=session, sleep=self.sleep, environ=environ
                )
            case ConfluenceSource():
                return SpacePages(source, pages, session=session, sleep=self.sleep, environ=environ)
            case GoogleDriveSource():
                return DriveChanges(
                    source, pages, cursor, session=session, sleep=self.sleep, environ=environ
                )

    def store(self, page: Fetched, run: _Run) -> None:
        """Write the page's object unless the bucket holds these bytes under its key already."""
        key = object_key(run.defined.source, page.url, page.name)
        digest = hashlib.sha256(page.data).hexdigest()
        known = run.state.objects.get(page.url)
        if known is not None and known.key == key and known.sha256 == digest:
            run.report.unchanged += 1
        else:
            self.objects.write_bytes(
                self.documents_bucket, key, page.data, metadata=_metadata(page.url)
            )
            if known is not None and known.key != key:
                self.objects.delete(self.documents_bucket, known.key)
            run.report.fetched += 1
        run.state.objects[page.url] = StoredObject(key=key, sha256=digest)
        run.state.pages[page.url] = PageState(
            url=page.url,
            doc_id=doc_id_for(f"{self.documents_bucket}/{key}"),
            etag=page.etag,
            last_modified=page.last_modified,
            links=list(page.links),
            item_id=page.item_id,
        )

    def remove(self, url: str, run: _Run) -> None:
        run.state.pages.pop(url, None)
        known = run.state.objects.pop(url, None)
        if known is None:
            return
        self.objects.delete(self.documents_bucket, known.key)
        run.report.removed += 1


def key_prefix(source: AnyStackSource) -> str:
    """Where a source's objects go: its collection's prefix (models.collection_of_key), then
    `sources/<name>/`."""
    collection = f"{COLLECTIONS_PREFIX}{source.collection}/" if source.collection else ""
    return f"{collection}sources/{source.name}/"


def object_key(source: AnyStackSource, url: str, name: str) -> str:
    """The object a page or file is written to: one folder per address (so two pages both read
    as `index.html` never share a key), then the file name it is read as (its type)."""
    folder = hashlib.sha256(url.encode()).hexdigest()[:16]
    return f"{key_prefix(source)}{folder}/{name}"


def _metadata(url: str) -> dict[str, str]:
    """The object's user metadata: its address, percent-encoded (S3 keeps ASCII only)."""
    address = quote(url, safe=":/?#[]@!$&'()*+,;=%~")
    return {SOURCE_URL: address} if len(address) <= LONGEST_URL else {}
