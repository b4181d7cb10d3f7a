"""The `docchat` command, a module per group of commands: documents.py (ingest, status, text,
rm), ask.py (ask, search), serve.py (serve, mcp), evaluate.py (eval); commands.py parses and runs
them, common.py is what they share and display.py how names and the status show in a terminal.

This module imports nothing heavy: the commands (the index, the PDF engine, numpy) load inside
`main`, where a Ctrl-C during that second of imports is an interruption like any other.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `docchat` command; its exit status (130 when interrupted)."""
    try:
        from docchat.cli.commands import run

        return run(argv)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130


def command() -> int:
    """The `docchat` program (its console script): `main` on the command line's arguments.

    Once the command is done, a Ctrl-C ends the process as it ends any program, at once and
    silently: Python's exit handlers (multiprocessing's among them) would print a traceback for
    a KeyboardInterrupt raised in them, and there is nothing left to interrupt.
    """
    status = main()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return status
