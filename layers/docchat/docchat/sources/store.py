"""The sources a data directory syncs (`docchat sources`), in its sources.json: each source's
configuration, what its last sync found, and what each page was when it was last fetched (its
validators, for a conditional GET, and its links, for a page that answers 304 Not Modified).
A file of its own beside the index, replaced whole (write, then rename), so a sync killed
half-way leaves the previous file."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from docchat.errors import SourceError

FILE_NAME = "sources.json"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class WebSource(BaseModel):
    """A web site to sync: where the crawl starts (a page or a sitemap) and its bounds."""

    kind: Literal["web"] = "web"
    name: str = Field(pattern=NAME_PATTERN)
    url: str
    depth: int = Field(2, ge=0, le=20)
    max_pages: int = Field(100, ge=1, le=100_000)
    rate: float = Field(1.0, ge=0, le=3600, description="seconds between requests")
    collection: str = ""


class PageState(BaseModel):
    """One fetched page or file as the last sync left it."""

    url: str
    doc_id: str
    etag: str = ""
    last_modified: str = ""
    links: list[str] = []


class SyncReport(BaseModel):
    """What one sync of a source did."""

    at: datetime
    fetched: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    skipped: int = 0  # links robots.txt disallows
    last_failure: str = ""
    skip_note: str = ""


class SourceEntry(BaseModel):
    source: WebSource
    pages: dict[str, PageState] = {}
    last_sync: SyncReport | None = None


class SourcesFile(BaseModel):
    sources: dict[str, SourceEntry] = {}


def sources_path(data_dir: Path) -> Path:
    """Where a data directory keeps its sources."""
    return data_dir / FILE_NAME


def load_sources(data_dir: Path) -> SourcesFile:
    """The data directory's sources (none when it has no sources file yet)."""
    path = sources_path(data_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return SourcesFile()
    except OSError as exc:
        said = exc.strerror or exc
        raise SourceError(f"cannot read {path} ({said}): check its permissions") from exc
    try:
        return SourcesFile.model_validate_json(text)
    except ValidationError as exc:
        raise SourceError(
            f"the sources file {path} is damaged ({exc.error_count()} errors): move it aside "
            "and add the sources again"
        ) from exc


def save_sources(data_dir: Path, sources: SourcesFile) -> None:
    """Replace the data directory's sources file with `sources`."""
    path = sources_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".json.{os.getpid()}.tmp")
    partial.write_text(sources.model_dump_json(indent=2), encoding="utf-8")
    os.replace(partial, path)


def entry_named(sources: SourcesFile, name: str) -> SourceEntry:
    """The source called `name`, or SourceError naming the ones there are."""
    found = sources.sources.get(name)
    if found is None:
        known = ", ".join(sorted(sources.sources)) or "none yet"
        raise SourceError(
            f"there is no source called {name!r} (sources: {known}): add it with "
            "`docchat sources add web URL --name NAME`"
        )
    return found


def now() -> datetime:
    return datetime.now(UTC)


def sources_health(data_dir: Path) -> dict[str, object]:
    """What /health says of the data directory's sources: each one's last sync, its counts and
    its last failure (never a credential: a web source has none)."""
    listed = []
    for name, entry in load_sources(data_dir).sources.items():
        done = entry.last_sync
        listed.append(
            {
                "name": name,
                "kind": entry.source.kind,
                "url": entry.source.url,
                "collection": entry.source.collection,
                "documents": len(entry.pages),
                "last_sync": None
                if done is None
                else done.model_dump(mode="json", exclude={"skip_note"}),
            }
        )
    return {"sources": listed}
