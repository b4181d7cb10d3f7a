"""Running the `docchat` command in the test's process, as a user types it (and the app
`docchat serve` runs, on a real uvicorn)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from docchat.cli import main
from docchat.wiring.local import local_app
from tests.chatkit import ServedApp


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


def add_web(capsys: pytest.CaptureFixture[str], data: str, url: str, *more: str) -> None:
    """`docchat sources add web URL --rate 0 *more`, which must succeed."""
    code, _, err = run(
        capsys, "sources", "add", "web", url, "--rate", "0", *more, "--data-dir", data
    )
    assert code == 0, err


@contextmanager
def served_app(data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The app `docchat serve` runs over `data`, on a real uvicorn: its base URL."""
    monkeypatch.setenv("DOCCHAT_DATA_DIR", str(data))
    served = ServedApp(local_app())
    served.start()
    try:
        yield f"http://127.0.0.1:{served.port}"
    finally:
        served.stop()
