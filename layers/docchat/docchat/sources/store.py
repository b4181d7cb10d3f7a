"""The sources a data directory syncs (`docchat sources`), in its sources.json: each source's
configuration (a web site, a Microsoft Graph drive: a SharePoint document library or a
OneDrive, a Confluence space, or a Google Drive shared drive or folder), what its last sync
found, and what each page or file was when it was last fetched (its validators, for a
conditional GET, a drive's unchanged file or a Confluence page's version, and its links, for a
page that answers 304 Not Modified), and where a drive's next sync resumes (its delta link, or
Google Drive's page token of changes).
A file of its own beside the index, replaced whole (write, then rename), so a sync killed
half-way leaves the previous file. Each change is made under a lock, so two docchat processes
(a sync and a `docchat sources add`) cannot lose each other's; one source is synced or removed
by one process at a time."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from docchat.errors import SourceError

FILE_NAME = "sources.json"
#: Held while a process changes sources.json, and while it syncs or removes a source.
_CHANGING = "sources.lock"
_SYNCING = "syncing"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
#: The name of an environment variable (a credential's, which is never kept itself).
ENV_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


class WebSource(BaseModel):
    """A web site to sync: where the crawl starts (a page or a sitemap) and its bounds."""

    kind: Literal["web"] = "web"
    name: str = Field(pattern=NAME_PATTERN)
    url: str
    depth: int = Field(2, ge=0, le=20)
    max_pages: int = Field(100, ge=1, le=100_000)
    rate: float = Field(1.0, ge=0, le=3600, description="seconds between requests")
    collection: str = ""

    @property
    def where(self) -> str:
        """Where its documents come from, as `docchat sources` and /health show it."""
        return self.url


GRAPH_URL = "https://graph.microsoft.com/v1.0"


class GraphSource(BaseModel):
    """A Microsoft Graph drive to sync: a drive by its id, or a SharePoint site's default
    document library, read as an app of the tenant (client credentials). The client secret is
    read from the environment variable `secret_env` when a sync runs, never kept here."""

    kind: Literal["sharepoint"] = "sharepoint"
    name: str = Field(pattern=NAME_PATTERN)
    tenant: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]{0,127}$")
    client_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
    secret_env: str = Field(pattern=ENV_PATTERN)
    drive: str = Field("", pattern=r"^[A-Za-z0-9!_.,-]{0,256}$")
    site: str = ""
    collection: str = ""

    @model_validator(mode="after")
    def _one_place(self) -> GraphSource:
        if bool(self.drive) == bool(self.site):
            raise ValueError("give either a drive id or a site, not both or neither")
        return self

    @property
    def where(self) -> str:
        """The site, or the drive's Graph URL."""
        return self.site or f"{GRAPH_URL}/drives/{self.drive}"


class ConfluenceSource(BaseModel):
    """A Confluence Cloud space to sync (its pages and their attachments), read as an Atlassian
    account (`email`) with an API token, which is read from the environment variable
    `token_env` when a sync runs, never kept here."""

    kind: Literal["confluence"] = "confluence"
    name: str = Field(pattern=NAME_PATTERN)
    site: str = Field(pattern=r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")
    space: str = Field(pattern=r"^~?[A-Za-z0-9_-]{1,255}$")
    email: str = Field(pattern=r"^[^@\s]+@[^@\s]+$")
    token_env: str = Field(pattern=ENV_PATTERN)
    collection: str = ""

    @property
    def where(self) -> str:
        """The space's address on its site."""
        return f"{self.site}/wiki/spaces/{self.space}"


GOOGLE_ID_PATTERN = r"^[A-Za-z0-9_-]{0,200}$"


class GoogleDriveSource(BaseModel):
    """A Google Drive shared drive, or a folder with its subfolders, to sync, read as a service
    account whose JSON key is read from the environment variable `key_env` when a sync runs,
    never kept here."""

    kind: Literal["gdrive"] = "gdrive"
    name: str = Field(pattern=NAME_PATTERN)
    key_env: str = Field(pattern=ENV_PATTERN)
    shared_drive: str = Field("", pattern=GOOGLE_ID_PATTERN)
    folder: str = Field("", pattern=GOOGLE_ID_PATTERN)
    collection: str = ""

    @model_validator(mode="after")
    def _one_place(self) -> GoogleDriveSource:
        if bool(self.shared_drive) == bool(self.folder):
            raise ValueError("give either a shared drive id or a folder id, not both or neither")
        return self

    @property
    def where(self) -> str:
        """The shared drive's or the folder's address in Drive (both open at /drive/folders/)."""
        return f"https://drive.google.com/drive/folders/{self.shared_drive or self.folder}"


AnySource = Annotated[
    WebSource | GraphSource | ConfluenceSource | GoogleDriveSource, Field(discriminator="kind")
]


class PageState(BaseModel):
    """One fetched page or file as the last sync left it (a drive's file: its item id, and its
    cTag, or its eTag where the delta feed gives no cTag, in `etag`; a Confluence page or
    attachment: its id, and its version number in `etag`; a Google Drive file: its id, and its
    md5Checksum, or a Google Doc's modifiedTime, in `etag`)."""

    url: str
    doc_id: str
    etag: str = ""
    last_modified: str = ""
    links: list[str] = []
    item_id: str = ""

    def unvalidated(self) -> PageState:
        """This page without its validators: the next walk fetches it in full (its document
        or object is gone)."""
        return self.model_copy(update={"etag": "", "last_modified": ""})


class SyncReport(BaseModel):
    """What one sync of a source did."""

    at: datetime
    fetched: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    skipped: int = 0  # links robots.txt disallows, and broken links
    last_failure: str = ""
    skip_note: str = ""


class SourceEntry(BaseModel):
    source: AnySource
    pages: dict[str, PageState] = {}
    last_sync: SyncReport | None = None
    #: Where the next sync starts: a drive's delta link, Google Drive's page token of changes
    #: ("" for a web site, crawled whole).
    cursor: str = ""

    @field_validator("source", mode="before")
    @classmethod
    def _web_unless_said(cls, value: Any) -> Any:
        # A source written before sources had kinds is a web site.
        if isinstance(value, dict) and "kind" not in value:
            return {**value, "kind": "web"}
        return value


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


@contextmanager
def changing_sources(data_dir: Path) -> Iterator[SourcesFile]:
    """The data directory's sources as they are now, to change in the block; saved when it
    ends (not when it raises). Another docchat process changing them waits until then."""
    with _held(data_dir / _CHANGING, wait=True):
        sources = load_sources(data_dir)
        yield sources
        save_sources(data_dir, sources)


@contextmanager
def syncing(data_dir: Path, name: str) -> Iterator[bool]:
    """Whether this process holds source `name` for the block (to sync or remove it): False
    while another docchat process does."""
    with _held(data_dir / _SYNCING / f"{name}.lock", wait=False) as held:
        yield held


@contextmanager
def _held(path: Path, *, wait: bool) -> Iterator[bool]:
    # Local mode's file locks (ingest.claims is not in the Lambda layer, where the stack's
    # sources use these models but never a data directory).
    from docchat.ingest.claims import locked

    try:
        handle = locked(path, wait=wait)
    except OSError:  # a directory this process cannot write: saving there says so
        handle, mine = None, True
    else:
        mine = handle is not None
    try:
        yield mine
    finally:
        if handle is not None:
            handle.close()


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


def held_elsewhere(sources: SourcesFile, name: str) -> dict[str, str]:
    """The documents sources other than `name` sync (two over one site reach the same pages),
    each with one of those sources' names: what removing `name`'s documents must keep."""
    held: dict[str, str] = {}
    for other, entry in sorted(sources.sources.items()):
        if other != name:
            for page in entry.pages.values():
                held.setdefault(page.doc_id, other)
    return held


def now() -> datetime:
    return datetime.now(UTC)


def sources_health(data_dir: Path) -> dict[str, object]:
    """What /health says of the data directory's sources: each one's last sync, its counts and
    its last failure (never a credential: a drive's secret, a Confluence token or a service
    account's key is not in sources.json)."""
    listed = []
    for name, entry in load_sources(data_dir).sources.items():
        done = entry.last_sync
        listed.append(
            {
                "name": name,
                "kind": entry.source.kind,
                "url": entry.source.where,
                "collection": entry.source.collection,
                "documents": len(entry.pages),
                "last_sync": None if done is None else done.model_dump(mode="json"),
            }
        )
    return {"sources": listed}
