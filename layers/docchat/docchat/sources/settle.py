"""What becomes of each outcome of a source's walk: the one mapping a local sync (sync.py, into
the index) and the stack's (stack_sync.py, into the documents bucket) share, so that a page
answers the same way wherever it is synced. Each says how it keeps, removes and reports a page
(`Settling`); which of those an outcome calls for is decided here only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from docchat.sources.crawl import (
    Deleted,
    Disallowed,
    Failed,
    Fetched,
    Gone,
    NotModified,
    Outcome,
)


class Walk(Protocol):
    """What a sync reads a source with (a web crawl, a drive's delta feed, a space's listing): its
    outcomes, whether it reached everything the source holds, and where the next sync starts."""

    complete: bool
    cursor: str

    def outcomes(self) -> Iterator[Outcome]: ...


class Settling(Protocol):
    """One source's sync as it goes: the pages it reached (kept or not, so that a complete walk
    removes the others), and what it does with a page."""

    @property
    def reached(self) -> set[str]: ...

    def holds(self, url: str) -> bool:
        """Whether the sync keeps what the page was (indexed, or an object in the bucket)."""
        ...

    def keep(self, page: Fetched) -> None: ...

    def unchanged(self, url: str) -> None: ...

    def remove(self, url: str, why: str) -> None: ...

    def forget(self, url: str) -> None:
        """Drop what the last sync knew of the page (its validators): the next one fetches it."""
        ...

    def failed(self, url: str, reason: str) -> None: ...

    def skipped(self, url: str, reason: str) -> None: ...


def settle(outcome: Outcome, run: Settling) -> None:
    """Do with `outcome` what it calls for. Nothing kept is lost to a page that fails: it stays
    until the page answers again; a broken link (gone, and never synced) is the site's to mend
    and is skipped."""
    url = outcome.url
    match outcome:
        case Fetched():
            run.reached.add(url)
            run.keep(outcome)
        case NotModified() if run.holds(url):
            run.reached.add(url)
            run.unchanged(url)
        case NotModified():  # validators without a copy (removed, or the state started over)
            run.forget(url)
            run.failed(url, f"{url}: answered 304 with no copy kept: sync again")
        case Gone() if run.holds(url):
            run.remove(url, f"gone ({outcome.status})")
        case Gone():
            run.skipped(url, f"{outcome.status}, a broken link on the site")
        case Deleted():
            run.remove(url, outcome.why)
        case Failed():
            run.reached.add(url)  # what it was is kept until it answers again
            run.failed(url, outcome.reason)
        case Disallowed():
            run.skipped(url, outcome.reason)
