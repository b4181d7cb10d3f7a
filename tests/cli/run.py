"""Running the `docchat` command in the test's process, as a user types it."""

from __future__ import annotations

import json
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


def status_documents(capsys: pytest.CaptureFixture[str], data: str) -> dict[str, dict[str, object]]:
    """The index's documents by source, each as `docchat status --json` shows it."""
    code, out, err = run(capsys, "status", "--json", "--data-dir", data)
    assert code == 0, err
    return {d["source"]: d for d in json.loads(out)["documents"]}


def last_sync(capsys: pytest.CaptureFixture[str], data: str) -> dict[str, object]:
    """What the data directory's one source's last sync did, as `docchat sources --json` says."""
    code, out, err = run(capsys, "sources", "--json", "--data-dir", data)
    assert code == 0, err
    (source,) = json.loads(out)
    last: dict[str, object] = source["last_sync"]
    return last


def counts(last: dict[str, object]) -> tuple[object, ...]:
    """A sync's fetched, unchanged, removed and failed counts."""
    return tuple(last[k] for k in ("fetched", "unchanged", "removed", "failed"))


def found(capsys: pytest.CaptureFixture[str], data: str, query: str) -> str:
    """The source of `docchat search`'s best passage for `query`."""
    code, out, err = run(capsys, "search", query, "--json", "--data-dir", data)
    assert code == 0, err
    source: str = json.loads(out)[0]["source"]
    return source
