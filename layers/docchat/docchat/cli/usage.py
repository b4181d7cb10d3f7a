"""`docchat usage`: what the answers `docchat serve` and `docchat ask` gave used and cost,
summed per day, user, collection or model (adapters/sqlite_usage.py, answer/usage.py)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import UTC, date, datetime, timedelta

from rich.table import Table

from docchat.adapters.sqlite_usage import SqliteUsage, Total
from docchat.cli import common
from docchat.cli.common import Opened
from docchat.config import Settings


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a day as YYYY-MM-DD") from None


def _days(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of days from 1")
    return int(value)


def add_usage_command(commands: common.Commands, common_parser: argparse.ArgumentParser) -> None:
    usage = commands.add_parser(
        "usage",
        parents=[common_parser],
        help="what the answers used and cost, per day, user, collection or model",
    )
    usage.add_argument("--by", choices=["day", "user", "collection", "model"], default="day")
    since = usage.add_mutually_exclusive_group()
    since.add_argument("--since", type=_day, default=None, metavar="YYYY-MM-DD")
    since.add_argument("--days", type=_days, default=None, help="the last N days, today included")
    usage.add_argument("--user", default=None, help="only this user's answers")
    usage.add_argument("--json", action="store_true")
    usage.set_defaults(run=run_usage)


def run_usage(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    since = args.since
    if args.days is not None:
        since = datetime.now(UTC).date() - timedelta(days=args.days - 1)
    totals: list[Total] = []
    if settings.usage_path.exists():
        ledger = SqliteUsage(settings.usage_path)
        try:
            totals = ledger.totals(args.by, since=since, user=args.user)
        finally:
            ledger.close()
    if args.json:
        rows = [dataclasses.asdict(t) | {args.by: t.key} for t in totals]
        sys.stdout.write(json.dumps([{k: v for k, v in r.items() if k != "key"} for r in rows]))
        sys.stdout.write("\n")
        return 0
    if not totals:
        common.out.print(f"no answers kept in {settings.usage_path} yet", markup=False)
        return 0
    table = Table(title=f"answers' usage in {settings.data_dir} (USD at list prices)")
    columns = ["answers", "tokens in", "from cache", "tokens out", "rerank units", "cost"]
    for name in (args.by, *columns):
        table.add_column(name, justify="left" if name == args.by else "right")
    for t in [*totals, _sum(totals)]:
        cost = f"${t.cost_usd:.4f}" + (f" (+{t.unpriced} unpriced)" if t.unpriced else "")
        table.add_row(
            t.key,
            str(t.answers),
            f"{t.input_tokens:,}",
            f"{t.cache_read_tokens:,}",
            f"{t.output_tokens:,}",
            f"{t.rerank_search_units:,}",
            cost,
        )
    common.out.print(table)
    return 0


def _sum(totals: list[Total]) -> Total:
    return Total(
        key="all",
        answers=sum(t.answers for t in totals),
        input_tokens=sum(t.input_tokens for t in totals),
        output_tokens=sum(t.output_tokens for t in totals),
        cache_read_tokens=sum(t.cache_read_tokens for t in totals),
        cost_usd=round(sum(t.cost_usd for t in totals), 6),
        unpriced=sum(t.unpriced for t in totals),
        rerank_search_units=sum(t.rerank_search_units for t in totals),
    )
