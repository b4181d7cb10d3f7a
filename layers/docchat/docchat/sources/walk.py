"""What the SaaS sources' walks (a Graph drive's delta feed, a Confluence space's listing, a
Google Drive's changes) are given and keep: the source, what the last sync knew of each file,
where this sync starts, how it asks (its session, its sleep between throttled answers, the
environment its credential is read from), and whether it reached everything; and how a walk
says that it cannot go on."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import requests

from docchat.sources.crawl import Failed
from docchat.sources.store import PageState

S = TypeVar("S")


class Stopped(Exception):
    """The source's sync cannot go on: why, for the sync's report."""

    def __init__(self, failed: Failed) -> None:
        super().__init__(failed.reason)
        self.failed = failed


@dataclass
class ServiceWalk(Generic[S]):
    """One sync of `source`, from `cursor` (where the last sync left the service's feed of
    changes; "" lists the source whole), given what the last sync knew of each file (`known`)."""

    source: S
    known: Mapping[str, PageState]
    cursor: str = ""
    session: requests.Session = field(default_factory=requests.Session)
    sleep: Callable[[float], None] = time.sleep
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    #: True once a full listing reached its end: the files it did not list are gone from the
    #: source. A listing of changes says what was deleted and is never complete in that sense.
    complete: bool = False
