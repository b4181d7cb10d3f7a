"""Running the `docchat` command in the test's process, as a user types it."""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """`docchat *argv`: its exit status, what it wrote to stdout and to stderr."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse refusing the command line
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_flat(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """As `run`, with stderr's words joined by single spaces: the terminal's wrapping of a long
    message is not part of what it says."""
    code, out, err = run(capsys, *argv)
    return code, out, " ".join(err.split())
