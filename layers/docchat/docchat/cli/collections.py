"""`docchat collections` and `docchat move`, and the `--collection` option the other commands
take (ingest places documents in it; ask and search answer from it; status, text and rm see
only its documents)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from docchat.cli import common
from docchat.cli.common import Opened
from docchat.cli.display import shown
from docchat.config import Settings
from docchat.errors import DocchatError, DocumentNotFoundError
from docchat.ingest.local import source_of
from docchat.models import (
    DEFAULT_COLLECTION,
    DocStatus,
    DocumentRecord,
    collection_name,
    collections_of,
)
from docchat.search.library import Visible


def collection_arg(value: str) -> str:
    """--collection: a collection's name."""
    try:
        return collection_name(value)
    except DocchatError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_collection_option(parser: argparse.ArgumentParser, help: str, *, many: bool) -> None:
    """`--collection NAME` on `parser` (repeatable when `many`)."""
    parser.add_argument(
        "--collection",
        type=collection_arg,
        action="append" if many else "store",
        default=None,
        metavar="NAME",
        help=help,
    )


def visible(args: argparse.Namespace, records: Sequence[DocumentRecord]) -> Visible | None:
    """What --collection lets a command see among `records` (None: every collection); a name
    no document is in is refused, so that a mistyped one is not an empty answer."""
    wanted = _named(args)
    if wanted is None:
        return None
    unknown = sorted(wanted - set(counts(records)))
    if unknown:
        raise DocumentNotFoundError(
            f"no collection {unknown[0]!r}: `docchat collections` lists the collections"
        )
    return Visible(collections=wanted)


def _named(args: argparse.Namespace) -> frozenset[str] | None:
    names = getattr(args, "collection", None)
    if not names:
        return None
    return frozenset([names] if isinstance(names, str) else names)


def within(records: Sequence[DocumentRecord], args: argparse.Namespace) -> list[DocumentRecord]:
    """The records --collection lets a command see."""
    seen = visible(args, records)
    return [r for r in records if seen is None or seen.admits(r)]


def totals_within(stats: dict[str, Any], documents: Sequence[DocumentRecord]) -> dict[str, Any]:
    """The index's `stats` with the totals counted over `documents` only (what --collection
    shows); the index's own facts (model, path, size) as they are."""
    by_status: dict[str, int] = {}
    for d in documents:
        by_status[d.status.value] = by_status.get(d.status.value, 0) + 1
    indexed = [d for d in documents if d.status == DocStatus.INDEXED]
    return {
        **stats,
        "documents": len(documents),
        "by_status": by_status,
        "indexed_pages": sum(d.pages for d in indexed),
        "chunks": sum(d.chunks for d in indexed),
    }


def check_in(record: DocumentRecord, args: argparse.Namespace, ref: str) -> DocumentRecord:
    """`record`, or DocumentNotFoundError when --collection leaves it out."""
    wanted = _named(args)
    if wanted is not None and not Visible(collections=wanted).admits(record):
        raise DocumentNotFoundError(
            f"no document {ref!r} in the collection {args.collection!r}: `docchat status "
            f"--collection {args.collection}` lists its documents"
        )
    return record


def add_collection_commands(
    commands: common.Commands, common_parser: argparse.ArgumentParser
) -> None:
    """The `collections` and `move` commands."""
    listing = commands.add_parser(
        "collections", parents=[common_parser], help="list the collections with document counts"
    )
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=_collections)
    move = commands.add_parser(
        "move",
        parents=[common_parser],
        help="move a document to a collection (no re-embedding)",
        description="Put a document in the collection --to: with --from, it leaves only that "
        "one (and keeps its others); without, it leaves every other.",
    )
    move.add_argument("doc", metavar="DOC", help="document id, path or file name")
    move.add_argument("--to", type=collection_arg, required=True, metavar="NAME")
    move.add_argument("--from", dest="source", type=collection_arg, default=None, metavar="NAME")
    move.set_defaults(run=_move)


def counts(records: Sequence[DocumentRecord]) -> dict[str, int]:
    """Each collection's number of documents; the default collection always, even empty."""
    found = {DEFAULT_COLLECTION: 0}
    for record in records:
        for name in record.collections:
            found[name] = found.get(name, 0) + 1
    return dict(sorted(found.items()))


def _collections(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    found = counts(common.existing_index(settings, opened).documents())
    if args.json:
        rows = [{"name": n, "documents": c} for n, c in found.items()]
        sys.stdout.write(json.dumps({"collections": rows}, indent=2) + "\n")
        return 0
    table = Table(title=f"collections in {settings.data_dir}")
    table.add_column("collection")
    table.add_column("documents", justify="right")
    for name, count in found.items():
        table.add_row(name, str(count))
    common.out.print(table)
    return 0


def _move(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    index = common.existing_index(settings, opened)
    record = index.find_document(args.doc, path=source_of(Path(args.doc)))
    if args.source is not None and args.source not in record.collections:
        raise DocumentNotFoundError(
            f"{record.doc_id} is not in the collection {args.source!r}: it is in "
            f"{', '.join(record.collections)}"
        )
    kept = [n for n in record.collections if n != args.source] if args.source else []
    moved = record.model_copy(update={"collections": collections_of([*kept, args.to])})
    index.set_record(moved)
    common.out.print(
        f"{record.doc_id} ({shown(Path(record.source).name)}) is in {', '.join(moved.collections)}",
        markup=False,
    )
    return 0
