"""Syncing one source into the index: each page or file the crawl (a web site), the delta feed
(a Graph drive), the listing of a space (Confluence) or Google Drive's changes fetch goes
through the local runner (`ingest_bytes`, the same as `docchat ingest`) into the source's
collection, with its URL (a drive file's webUrl, a Confluence page's web link, a Google Drive
file's webViewLink) as the document's source; a page gone from the site or the space, or a file
deleted from the drive, is removed as `docchat rm` removes a
document (`Shelf.remove`). Nothing already indexed is lost to a failing page or sync."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import requests

from docchat.config import Settings
from docchat.ingest import claims
from docchat.ingest.decision import doc_id_for
from docchat.ingest.formats import suffix_of
from docchat.ingest.local import ingest_bytes
from docchat.ingest.notes import ChunkNotes
from docchat.ingest.shelf import Shelf
from docchat.models import synced_copy
from docchat.ports import Embedder
from docchat.sources.confluence import SpacePages
from docchat.sources.crawl import Crawler, Fetched
from docchat.sources.gdrive import DriveChanges
from docchat.sources.graph import DriveDelta
from docchat.sources.settle import Walk, settle
from docchat.sources.store import (
    ConfluenceSource,
    GoogleDriveSource,
    GraphSource,
    PageState,
    SourceEntry,
    SyncReport,
    WebSource,
    now,
)

#: What a sync reports as it goes: (url, what became of it).
Reported = Callable[[str, str], None]
#: Why a document a complete walk did not reach is removed, by the source's kind.
_NOT_REACHED = {
    "web": "no longer linked",
    "sharepoint": "not in the drive",
    "confluence": "not in the space",
    "gdrive": "not in the shared drive or folder",
}


@dataclass
class _Tally:
    """A sync's counts as they grow, and the pages it reached (kept or not)."""

    report: SyncReport
    pages: dict[str, PageState]
    #: Documents other sources sync too (doc id -> one of them): never removed by this one.
    others: Mapping[str, str] = field(default_factory=dict)
    reached: set[str] = field(default_factory=set)

    def failed(self, reason: str) -> None:
        self.report.failed += 1
        self.report.last_failure = reason


@dataclass
class _Run:
    """One source's sync into the index as it goes (a `settle.Settling`)."""

    syncer: Syncer
    entry: SourceEntry
    tally: _Tally

    @property
    def reached(self) -> set[str]:
        return self.tally.reached

    def holds(self, url: str) -> bool:
        return url in self.tally.pages

    def keep(self, page: Fetched) -> None:
        self.syncer.ingest(page, self.entry, self.tally)

    def unchanged(self, url: str) -> None:
        self.tally.report.unchanged += 1
        self.syncer.said(url, "unchanged (304)")

    def remove(self, url: str, why: str) -> None:
        self.syncer.remove(url, self.tally, why=why)

    def forget(self, url: str) -> None:
        self.tally.pages.pop(url, None)

    def failed(self, url: str, reason: str) -> None:
        self.tally.failed(reason)  # with the URL it is about, as `docchat sources` shows it
        self.syncer.said(url, f"failed: {reason.removeprefix(f'{url}: ')}")

    def skipped(self, url: str, reason: str) -> None:
        self.tally.report.skipped += 1
        self.tally.report.skip_note = f"{url}: {reason}"
        self.syncer.said(url, f"skipped: {reason}")


@dataclass(frozen=True)
class Syncer:
    """What a sync writes with: the index's shelf, the embedder and the settings."""

    shelf: Shelf
    embedder: Embedder
    settings: Settings
    notes: ChunkNotes | None = None
    session: requests.Session | None = None
    on_page: Reported | None = None
    #: How a sync waits (between a site's requests, for a throttled drive's Retry-After).
    sleep: Callable[[float], None] = time.sleep

    def sync(self, entry: SourceEntry, *, others: Mapping[str, str] = {}) -> SourceEntry:
        """`entry` synced: its pages as the source has them now, and the sync's report; what
        `others` holds (documents other sources sync) is left in the index. A failure that
        stops the sync (the disk, the embedder) propagates after what was done is kept in
        `entry`, which the caller saves."""
        self._refetch_lost(entry)
        tally = _Tally(SyncReport(at=now()), dict(entry.pages), others)
        walk = self._walk(entry)
        run = _Run(self, entry, tally)
        try:
            for outcome in walk.outcomes():
                settle(outcome, run)
            if walk.complete:
                why = _NOT_REACHED[entry.source.kind]
                for url in [u for u in tally.pages if u not in tally.reached]:
                    self.remove(url, tally, why=why)
            # A drive's changes are asked for once: with a failure among them, the next sync
            # asks for them again (what did not change is not fetched again).
            if not tally.report.failed:
                entry.cursor = walk.cursor
        except KeyboardInterrupt:
            tally.failed("the sync was interrupted: run it again")
            raise
        except Exception as exc:
            tally.failed(f"the sync stopped: {exc}")
            raise
        finally:
            entry.pages = tally.pages
            entry.last_sync = tally.report
        return entry

    def _refetch_lost(self, entry: SourceEntry) -> None:
        """Pages whose documents are no longer in the index (removed with `docchat rm`, or the
        index started over) lose their validators, so that the walk fetches them again instead
        of taking them as unchanged; a drive's changes since the last sync would not list them,
        so its walk starts over (what did not change is still not fetched)."""
        catalog = self.shelf.catalog
        lost = {
            url
            for url, page in entry.pages.items()
            if (page.etag or page.last_modified) and catalog.document(page.doc_id) is None
        }
        if not lost:
            return
        entry.pages = {
            url: page.unvalidated() if url in lost else page for url, page in entry.pages.items()
        }
        entry.cursor = ""

    def _walk(self, entry: SourceEntry) -> Walk:
        session = self.session or requests.Session()
        match entry.source:
            case WebSource():
                return Crawler(entry.source, entry.pages, session=session, sleep=self.sleep)
            case GraphSource():
                return DriveDelta(
                    entry.source, entry.pages, entry.cursor, session=session, sleep=self.sleep
                )
            case ConfluenceSource():
                return SpacePages(entry.source, entry.pages, session=session, sleep=self.sleep)
            case GoogleDriveSource():
                return DriveChanges(
                    entry.source, entry.pages, entry.cursor, session=session, sleep=self.sleep
                )

    def ingest(self, page: Fetched, entry: SourceEntry, tally: _Tally) -> None:
        going_to = [entry.source.collection] if entry.source.collection else []
        # As `docchat ingest` does: one process at a time converts and embeds a document.
        held = claims.claim(
            self.settings.data_dir, doc_id_for(page.url), source=page.url, collections=going_to
        )
        if held is None:
            busy = "another docchat process is ingesting it: sync again when it is done"
            tally.failed(f"{page.url}: {busy}")
            self.said(page.url, f"failed: {busy}")
            return
        with held:
            result = ingest_bytes(
                page.data,
                source=page.url,
                name=page.name,
                shelf=self.shelf,
                embedder=self.embedder,
                settings=self.settings,
                on_progress=held.report,
                command="sync",
                notes=self.notes,
                collections=going_to,
            )
        if result.outcome == "failed":
            tally.failed(f"{page.url}: {result.record.error}")
            self.said(page.url, f"failed: {result.record.error}")
            # A page that no longer reads is FAILED in the index; no validators are kept, so
            # the next sync fetches it again.
            tally.pages[page.url] = PageState(
                url=page.url, doc_id=result.record.doc_id, item_id=page.item_id
            )
            return
        if result.outcome == "unchanged":
            tally.report.unchanged += 1
        else:
            tally.report.fetched += 1
        doc_id = doc_id_for(page.url)  # a duplicate's record is its twin's
        if suffix_of(page.name) == ".pdf":
            keep_copy(self.settings.synced_files, doc_id, page.data)
        if result.outcome == "duplicate":
            twin = result.record.source
            self.said(page.url, f"the same content as {twin}, copied from it without embedding")
        else:
            self.said(page.url, result.outcome)
        tally.pages[page.url] = PageState(
            url=page.url,
            doc_id=doc_id,
            etag=page.etag,
            last_modified=page.last_modified,
            links=list(page.links),
            item_id=page.item_id,
        )

    def remove(self, url: str, tally: _Tally, *, why: str) -> None:
        known = tally.pages.pop(url, None)
        doc_id = known.doc_id if known is not None else doc_id_for(url)
        if doc_id in tally.others:
            self.said(url, f"kept: source {tally.others[doc_id]!r} syncs it too")
            return
        if self.shelf.catalog.document(doc_id) is None:
            return
        self.shelf.remove(doc_id)
        synced_copy(self.settings.synced_files, doc_id).unlink(missing_ok=True)
        tally.report.removed += 1
        self.said(url, f"removed: {why}")

    def said(self, url: str, what: str) -> None:
        if self.on_page is not None:
            self.on_page(url, what)


def keep_copy(folder: Path, doc_id: str, data: bytes) -> None:
    """Keep the PDF a synced document was read from for the viewer (`synced_copy`), written
    whole before it replaces an older copy."""
    path = synced_copy(folder, doc_id)
    if path.is_file() and path.read_bytes() == data:
        return
    folder.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".pdf.{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, path)
