"""`docchat sources` (list, add) and `docchat sync`: web sites synced into the data directory's
documents (docchat.sources), through the same ingestion and removal as `docchat ingest` / `rm`."""

from __future__ import annotations

import argparse
import json
import re
import sys
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
    SourceEntry,
    SourcesFile,
    WebSource,
    entry_named,
    load_sources,
    save_sources,
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
    add.add_argument("kind", choices=["web"], help="what kind of source (web: a web site)")
    add.add_argument("url", help="the start page, or the site's sitemap.xml")
    add.add_argument("--depth", type=_count, default=2, help="links followed from the start")
    add.add_argument("--max-pages", type=_count, default=100, help="pages fetched at most")
    add.add_argument("--rate", type=_seconds, default=1.0, help="seconds between requests")
    add.add_argument("--name", default=None, help="the source's name (default: its host)")
    add_collection_option(add, "the collection its documents go to", many=False)
    rm = actions.add_parser(
        "rm", parents=[common_parser], help="forget a source and remove its documents"
    )
    rm.add_argument("name", help="the source's name, as `docchat sources` lists it")
    sources.set_defaults(run=run_sources)
    sync = commands.add_parser(
        "sync", parents=[common_parser], help="fetch the sources' pages into the index"
    )
    sync.add_argument("name", nargs="?", default=None, help="one source (default: all)")
    sync.set_defaults(run=run_sync)


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number: give 0 or more")
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
        rows = [e.model_dump(mode="json", exclude={"pages"}) for e in sources.sources.values()]
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
    lines = [
        f"{s.name}: {s.kind} {s.url} (collection {s.collection or 'default'}, depth {s.depth}, "
        f"at most {plural(s.max_pages, 'page')}, {s.rate:g} s between requests)"
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
    if done.skip_note:
        lines.append(f"  skipped: {done.skip_note}")
    return lines


def _add(args: argparse.Namespace, settings: Settings) -> int:
    url = checked_url(args.url)
    name = args.name or re.sub(r"[^A-Za-z0-9._-]+", "-", urlsplit(url).netloc).strip("-.")
    sources = load_sources(settings.data_dir)
    # Two sources of one site would each remove the pages the other synced.
    twin = next((e.source.name for e in sources.sources.values() if e.source.url == url), None)
    if twin is not None:
        raise SourceError(f"{url} is already synced by source {twin!r}: sync that one")
    if name in sources.sources:
        raise SourceError(
            f"there is already a source called {name!r} ({sources.sources[name].source.url}): "
            "give this one another --name"
        )
    try:
        source = WebSource(
            name=name,
            url=url,
            depth=args.depth,
            max_pages=args.max_pages,
            rate=args.rate,
            collection=args.collection or "",
        )
    except ValidationError as exc:
        wrong = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise SourceError(f"the source cannot be added ({wrong}): {_NAMES}") from exc
    sources.sources[name] = SourceEntry(source=source)
    save_sources(settings.data_dir, sources)
    common.out.print(f"added {name}: sync it with `docchat sync {name}`", markup=False)
    return 0


def _rm(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Remove the source's documents as `docchat rm` does, then forget the source."""
    sources = load_sources(settings.data_dir)
    entry = entry_named(sources, args.name)
    removed = 0
    if entry.pages and settings.index_path.exists():
        local = open_local(settings)
        opened.closed_later(local.file)
        for page in entry.pages.values():
            if local.catalog.document(page.doc_id) is not None:
                local.shelf.remove(page.doc_id)
                removed += 1
            synced_copy(settings.synced_files, page.doc_id).unlink(missing_ok=True)
    del sources.sources[args.name]
    save_sources(settings.data_dir, sources)
    said = f"removed {args.name} and {plural(removed, 'document')} synced from it"
    common.out.print(shown(said), markup=False)
    return 0


_NAMES = "a name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"


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
        failed += _synced(syncer, sources, name, settings)
    local.file.flush()
    return 1 if failed else 0


def _synced(syncer: Syncer, sources: SourcesFile, name: str, settings: Settings) -> int:
    """Sync source `name`, saving what it did even when it stops; its failed pages."""
    entry = sources.sources[name]
    try:
        syncer.sync(entry)
    finally:
        save_sources(settings.data_dir, sources)
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
