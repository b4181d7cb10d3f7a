"""Running the `docchat` command in the test's process, as a user types it."""

from __future__ import annotations

import pytest

from docchat.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`docchat *argv`: its exit status, what it wrote to stdout and to stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
