"""The `docchat` command line and its run: every command with its module's options."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape

from docchat import VERSION
from docchat.cli import (
    ask,
    collections,
    common,
    documents,
    evaluate,
    feedback,
    serve,
    sources,
    usage,
)
from docchat.cli.display import shown
from docchat.config import Settings
from docchat.errors import DocchatError


def run(argv: Sequence[str] | None = None) -> int:
    """Run one `docchat` command; its exit status (2 for an error it explains)."""
    args = parser().parse_args(argv)
    opened = common.Opened()
    try:
        settings = Settings.from_env(os.environ, data_dir=args.data_dir)
        return int(args.run(args, settings, opened))
    except DocchatError as exc:
        common.err.print(f"[red]error:[/red] {escape(shown(str(exc)))}", markup=True)
        return 2
    except KeyboardInterrupt:
        common.err.print("interrupted")
        return 130
    finally:
        opened.close()


def parser() -> argparse.ArgumentParser:
    """The `docchat` command line: every command with `--data-dir`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the index lives (default: $DOCCHAT_DATA_DIR or .docchat/)",
    )
    command = argparse.ArgumentParser(prog="docchat", description="Chat with your documents.")
    command.add_argument("--version", action="version", version=f"docchat {VERSION}")
    commands = command.add_subparsers(dest="command", required=True)
    documents.add_ingest(commands, common)
    ask.add_commands(commands, common)
    serve.add_commands(commands, common)
    documents.add_listing(commands, common)
    evaluate.add_commands(commands, common)
    collections.add_collection_commands(commands, common)
    usage.add_usage_command(commands, common)
    feedback.add_commands(commands, common)
    sources.add_commands(commands, common)
    return command
