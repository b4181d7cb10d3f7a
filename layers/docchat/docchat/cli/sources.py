"""`docchat sources` (list, add, rm) and `docchat sync`: web sites, Microsoft Graph drives
(SharePoint document libraries, OneDrives), Confluence Cloud spaces and Google Drive shared
drives or folders synced into the data directory's documents (docchat.sources), through the
same ingestion and removal as `docchat ingest` / `rm`."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

from pydantic import ValidationError

from docchat.cli import common
from docchat.cli.collections import add_collection_option
from docchat.cli.common import Commands, Opened, plural
from docchat.cli.display import shown
from docchat.config import Settings
from docchat.errors import SourceError
from docchat.models import synced_copy
from docchat.sources.crawl import checked_url
from docchat.sources.store import (
    AnySource,
    ConfluenceSource,
    GoogleDriveSource,
    GraphSource,
    SourceEntry,
    WebSource,
    changing_sources,
    entry_named,
    held_elsewhere,
    load_sources,
    syncing,
)
from docchat.sources.sync import Syncer
from docchat.wiring import chunk_notes
from docchat.wiring.local import local_embedder, open_local


def add_commands(commands: Commands, common_parser: argparse.ArgumentParser) -> None:
    """`docchat sources [add web URL …]` and `docchat sync [NAME]`."""
    sources = commands.add_parser(
        "sources", parents=[common_parser], help="list the sources synced, or add one"
    )
    sources.add_argument("--json", action="store_true", help="print the sources as JSON")
    actions = sources.add_subparsers(dest="action")
    add = actions.add_parser("add", parents=[common_parser], help="add a source to sync")
    kinds = add.add_subparsers(dest="kind", required=True, metavar="KIND")
    web = kinds.add_parser("web", parents=[common_parser], help="a web site")
    web.add_argument("url", help="the start page, or the site's sitemap.xml")
    web.add_argument("--depth", type=_count, default=2, help="links followed from the start")
    web.add_argument("--max-pages", type=_pages, default=100, help="pages fetched at most")
    web.add_argument("--rate", type=_seconds, default=1.0, help="seconds between requests")
    _named(web, "its host")
    graph = kinds.add_parser(
        "sharepoint",
        parents=[common_parser],
        help="a SharePoint document library or a OneDrive (Microsoft Graph)",
    )
    graph.add_argument("--tenant", required=True, help="the Entra tenant (id or domain)")
    graph.add_argument("--client-id", required=True, help="the app registration's client id")
    _secret(graph, "--secret-env", "the app's client secret")
    where = graph.add_mutually_exclusive_group(required=True)
    where.add_argument("--drive", help="the drive's id")
    where.add_argument("--site", help="a SharePoint site's URL or id: its default document library")
    _named(graph, "from the site")
    confluence = kinds.add_parser(
        "confluence", parents=[common_parser], help="a Confluence Cloud space and its attachments"
    )
    confluence.add_argument("--site", required=True, help="the site: https://NAME.atlassian.net")
    confluence.add_argument("--space", required=True, help="the space's key (ENG, ~jdoe)")
    confluence.add_argument("--email", required=True, help="the Atlassian account's email")
    _secret(confluence, "--token-env", "the account's API token")
    _named(confluence, "site-space")
    gdrive = kinds.add_parser(
        "gdrive", parents=[common_parser], help="a Google Drive shared drive, or a folder"
    )
    _secret(gdrive, "--key-env", "the service account's JSON key")
    where = gdrive.add_mutually_exclusive_group(required=True)
    where.add_argument("--drive", help="a shared drive's id (in its address, /drive/folders/ID)")
    where.add_argument("--folder", help="a folder's id: the folder and its subfolders")
    _named(gdrive, "gdrive-ID")
    rm = actions.add_parser(
        "rm", parents=[common_parser], help="forget a source and remove its documents"
    )
    rm.add_argument("name", help="the source's name, as `docchat sources` lists it")
    sources.set_defaults(run=run_sources)
    sync = commands.add_parser(
        "sync", parents=[common_parser], help="fetch the sources' pages and files into the index"
    )
    sync.add_argument("name", nargs="?", default=None, help="one source (default: all)")
    sync.set_defaults(run=run_sync)


def _secret(parser: argparse.ArgumentParser, flag: str, holding: str) -> None:
    """The option naming the environment variable that holds a source's secret."""
    parser.add_argument(
        flag,
        required=True,
        metavar="VAR",
        help=f"the environment variable holding {holding} (never stored)",
    )


def _named(parser: argparse.ArgumentParser, default: str) -> None:
    """The options every kind ends with: the source's name and its collection."""
    parser.add_argument("--name", default=None, help=f"the source's name (default: {default})")
    add_collection_option(parser, "the collection its documents go to", many=False)


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number: give 0 or more")
    return int(value)


def _pages(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of pages: give 1 or more")
    return int(value)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds from 0 to 3600")
    return seconds


def run_sources(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """List the sources, or add one (`docchat sources add`)."""
    if args.action == "add":
        return _add(args, settings)
    if args.action == "rm":
        return _rm(args, settings, opened)
    sources = load_sources(settings.data_dir)
    if args.json:
        shown_rows = sources.sources.values()
        rows = [e.model_dump(mode="json", exclude={"pages", "cursor"}) for e in shown_rows]
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return 0
    if not sources.sources:
        common.out.print("no sources yet: add one with `docchat sources add web URL`")
    for entry in sources.sources.values():
        for line in _described(entry):
            common.out.print(shown(line), markup=False)
    return 0


def _described(entry: SourceEntry) -> list[str]:
    s = entry.source
    match s:
        case WebSource():
            lines = [
                f"{s.name}: {s.kind} {s.url} (collection {s.collection or 'default'}, depth "
                f"{s.depth}, at most {plural(s.max_pages, 'page')}, {s.rate:g} s between "
                "requests)"
            ]
        case GraphSource():
            lines = [
                f"{s.name}: {s.kind} {s.where} (collection {s.collection or 'default'}, tenant "
                f"{s.tenant}, app {s.client_id}, its secret in ${s.secret_env})"
            ]
        case ConfluenceSource():
            lines = [
                f"{s.name}: {s.kind} {s.where} (collection {s.collection or 'default'}, as "
                f"{s.email}, the API token in ${s.token_env})"
            ]
        case GoogleDriveSource():
            what = "shared drive" if s.shared_drive else "folder and its subfolders"
            lines = [
                f"{s.name}: {s.kind} {what} {s.where} (collection {s.collection or 'default'}, "
                f"as the service account whose key is in ${s.key_env})"
            ]
    done = entry.last_sync
    if done is None:
        return [*lines, "  never synced: run `docchat sync`"]
    lines.append(
        f"  last sync {done.at:%Y-%m-%d %H:%M:%S} UTC: {done.fetched} fetched, {done.unchanged} "
        f"unchanged, {done.removed} removed, {done.failed} failed, {done.skipped} skipped; "
        f"{plural(len(entry.pages), 'document')} from it"
    )
    if done.last_failure:
        lines.append(f"  last failure: {done.last_failure}")
    if done.skip_note:  # the last of them (`docchat sync` names each)
        last = "" if done.skipped <= 1 else f" {done.skipped}, the last"
        lines.append(f"  skipped{last}: {done.skip_note}")
    return lines


def _add(args: argparse.Namespace, settings: Settings) -> int:
    makers: dict[str, Callable[[argparse.Namespace], AnySource]] = {
        "web": _web,
        "sharepoint": _graph,
        "confluence": _confluence,
        "gdrive": _gdrive,
    }
    source = makers[args.kind](args)
    with changing_sources(settings.data_dir) as sources:  # a sync running keeps this one
        # Two sources of one site or drive would each remove the documents the other synced.
        twin = next(
            (e.source.name for e in sources.sources.values() if _same_place(e.source, source)),
            None,
        )
        if twin is not None:
            raise SourceError(f"{source.where} is already synced by source {twin!r}: sync that one")
        if source.name in sources.sources:
            raise SourceError(
                f"there is already a source called {source.name!r} "
                f"({sources.sources[source.name].source.where}): give this one another --name"
            )
        sources.sources[source.name] = SourceEntry(source=source)
    said = f"added {source.name}: sync it with `docchat sync {source.name}`"
    common.out.print(said, markup=False)
    return 0


def _same_place(a: AnySource, b: AnySource) -> bool:
    if isinstance(a, GraphSource) and isinstance(b, GraphSource):
        return a.tenant.lower() == b.tenant.lower() and a.where.lower() == b.where.lower()
    if isinstance(a, ConfluenceSource) and isinstance(b, ConfluenceSource):
        return a.where.lower() == b.where.lower()  # host names and space keys ignore case
    if isinstance(a, WebSource) and isinstance(b, WebSource):
        return checked_url(a.url) == checked_url(b.url)  # as written before it was one spelling
    return a.kind == b.kind and a.where == b.where


def _web(args: argparse.Namespace) -> WebSource:
    url = checked_url(args.url)
    name = args.name or _slug(urlsplit(url).netloc)
    return _built(
        WebSource,
        name=name,
        url=url,
        depth=args.depth,
        max_pages=args.max_pages,
        rate=args.rate,
        collection=args.collection or "",
    )


def _graph(args: argparse.Namespace) -> GraphSource:
    site = (args.site or "").strip()
    if site.startswith("http"):
        parts = urlsplit(site)
        if parts.scheme != "https" or not parts.hostname:
            raise SourceError(
                f"{site!r} is not a SharePoint site docchat can sync: give its https:// URL "
                "(https://contoso.sharepoint.com/sites/team) or its site id"
            )
        site = f"https://{parts.hostname}{parts.path.rstrip('/')}"
    elif site and not re.fullmatch(r"[A-Za-z0-9.-]+(,[0-9A-Fa-f-]{36}){2}", site):
        raise SourceError(
            f"{site!r} is neither a site URL nor a site id: give the site's https:// URL, or "
            "its id (hostname,site-collection-id,web-id)"
        )
    drive = _slug(args.drive or "")
    default = _slug(site.removeprefix("https://")) if site else f"drive-{drive}"
    return _built(
        GraphSource,
        name=args.name or default[:64].strip("-."),
        tenant=args.tenant,
        client_id=args.client_id,
        secret_env=args.secret_env,
        drive=args.drive or "",
        site=site,
        collection=args.collection or "",
    )


def _confluence(args: argparse.Namespace) -> ConfluenceSource:
    parts = urlsplit(args.site.strip())
    if parts.scheme != "https" or not parts.hostname or parts.path.strip("/") not in ("", "wiki"):
        raise SourceError(
            f"{args.site!r} is not a Confluence Cloud site docchat can sync: give its https:// "
            "address alone (https://example.atlassian.net)"
        )
    site = f"https://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    default = _slug(f"{parts.hostname.split('.')[0]}-{args.space}")
    return _built(
        ConfluenceSource,
        name=args.name or default[:64].strip("-."),
        site=site,
        space=args.space,
        email=args.email,
        token_env=args.token_env,
        collection=args.collection or "",
    )


def _gdrive(args: argparse.Namespace) -> GoogleDriveSource:
    place = (args.drive or args.folder or "").strip()
    return _built(
        GoogleDriveSource,
        name=args.name or f"gdrive-{_slug(place)[:40]}".strip("-."),
        key_env=args.key_env,
        shared_drive=place if args.drive else "",
        folder=place if args.folder else "",
        collection=args.collection or "",
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")


_S = TypeVar("_S", WebSource, GraphSource, ConfluenceSource, GoogleDriveSource)


def _built(model: type[_S], **fields: object) -> _S:
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        wrong = [(str(e["loc"][0]) if e["loc"] else "", e["msg"]) for e in exc.errors()]
        said = "; ".join(f"{field}: {msg}" if field else msg for field, msg in wrong)
        hints = [_HINTS[field] for field in dict.fromkeys(f for f, _ in wrong) if field in _HINTS]
        hint = f": {'; '.join(hints)}" if hints else ""
        raise SourceError(f"the source cannot be added ({said}){hint}") from exc


def _rm(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Remove the source's documents as `docchat rm` does, then forget the source."""
    entry_named(load_sources(settings.data_dir), args.name)
    with syncing(settings.data_dir, args.name) as mine:
        if not mine:
            raise SourceError(
                f"another docchat process is syncing {args.name!r}: remove it when that sync ends"
            )
        sources = load_sources(settings.data_dir)
        entry = entry_named(sources, args.name)
        others = held_elsewhere(sources, args.name)
        shared = [page.doc_id for page in entry.pages.values() if page.doc_id in others]
        removed = 0
        if entry.pages and settings.index_path.exists():
            local = open_local(settings)
            opened.closed_later(local.file)
            for page in entry.pages.values():
                if page.doc_id in others:
                    continue  # another source's too: it stays until that one lets it go
                if local.catalog.document(page.doc_id) is not None:
                    local.shelf.remove(page.doc_id)
                    removed += 1
                synced_copy(settings.synced_files, page.doc_id).unlink(missing_ok=True)
        with changing_sources(settings.data_dir) as sources:
            sources.sources.pop(args.name, None)
    said = f"removed {args.name} and {plural(removed, 'document')} synced from it"
    if shared:
        names = sorted({others[doc_id] for doc_id in shared})
        who = f"source {names[0]!r} syncs" if len(names) == 1 else f"sources {names} sync"
        said += f"; kept {plural(len(shared), 'document')} {who} too"
    common.out.print(shown(said), markup=False)
    return 0


_NAMES = "a name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
_HINTS = {
    "name": _NAMES,
    "depth": "give --depth from 0 to 20",
    "max_pages": "give --max-pages from 1 to 100000",
    "tenant": "give the tenant's id or its domain (contoso.onmicrosoft.com)",
    "client_id": "give the app registration's application (client) id",
    "secret_env": "give the NAME of an environment variable (letters, digits, '_'), not the secret",
    "drive": "give the drive's id as Graph lists it (b!…)",
    "space": "give the space's key, as its address shows it (/wiki/spaces/KEY)",
    "email": "give the email address of the Atlassian account the API token belongs to",
    "token_env": "give the NAME of an environment variable (letters, digits, '_'), not the token",
    "key_env": "give the NAME of an environment variable (letters, digits, '_'), not the key",
    "shared_drive": "give the shared drive's id, as its address shows it (/drive/folders/ID)",
    "folder": "give the folder's id, as its address shows it (/drive/folders/ID)",
}


def run_sync(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Sync one source or all of them; 1 when a page failed (each reason is listed)."""
    sources = load_sources(settings.data_dir)
    names = [entry_named(sources, args.name).source.name] if args.name else list(sources.sources)
    if not names:
        raise SourceError(
            "there are no sources to sync: add one with `docchat sources add web URL`"
        )
    embedder = local_embedder(settings)
    local = open_local(settings, embedder)
    opened.closed_later(local.file)
    syncer = Syncer(
        shelf=local.shelf,
        embedder=embedder,
        settings=settings,
        notes=chunk_notes(settings, local.file),
        on_page=lambda url, what: common.out.print(shown(f"{url}: {what}"), markup=False),
    )
    failed = 0
    for name in names:
        failed += _synced(syncer, name, settings)
    local.file.flush()
    return 1 if failed else 0


def _synced(syncer: Syncer, name: str, settings: Settings) -> int:
    """Sync source `name`, saving what it did even when it stops; its failed pages. A source
    another docchat process is syncing is left to it."""
    with syncing(settings.data_dir, name) as mine:
        sources = load_sources(settings.data_dir)
        entry = sources.sources.get(name)
        if not mine or entry is None:
            why = "another docchat process is syncing it" if not mine else "it was removed"
            common.out.print(shown(f"{name}: skipped: {why}"), markup=False)
            return 0
        try:
            syncer.sync(entry, others=held_elsewhere(sources, name))
        finally:  # only this source's entry: what another process changed meanwhile is kept
            with changing_sources(settings.data_dir) as sources:
                if name in sources.sources:
                    sources.sources[name] = entry
    done = entry.last_sync
    assert done is not None
    common.out.print(
        shown(
            f"{name}: {done.fetched} fetched, {done.unchanged} unchanged, {done.removed} removed, "
            f"{done.failed} failed, {done.skipped} skipped"
        ),
        markup=False,
    )
    return done.failed
