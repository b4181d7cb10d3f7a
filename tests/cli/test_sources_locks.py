"""Two docchat processes at one source: a `docchat sync` running in another process while this
one adds a source, syncs the same source or removes it. Nothing either does is lost, and one
source is synced by one process at a time."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.cli.run import run
from tests.cli.sandbox import DOCCHAT, env
from tests.cli.website import Page, Site, page, serving


def _site(hold: threading.Event) -> Site:
    """A home page and a guide that is not answered until `hold` is set."""
    site = Site()
    site.pages["/"] = Page(page("Home", "Harbour index.", "/guide.html"))
    site.pages["/guide.html"] = Page(page("Guide", "The harbour opens at dawn."), hold=hold)
    site.pages["/other/"] = Page(page("Other", "The ferry leaves at noon."))
    return site


def _sync_in_another_process(site: Site, data: str) -> subprocess.Popen[str]:
    """`docchat sync` in a child process, once it is waiting for the guide."""
    child = subprocess.Popen(
        [str(DOCCHAT), "sync", "--data-dir", data],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(),
    )
    deadline = time.monotonic() + 120
    while "/guide.html" not in site.paths():
        assert child.poll() is None, child.communicate()[0]
        assert time.monotonic() < deadline, "the child sync never asked for the guide"
        time.sleep(0.05)
    return child


def _sources(capsys: pytest.CaptureFixture[str], data: str) -> dict[str, dict[str, object]]:
    code, out, err = run(capsys, "sources", "--json", "--data-dir", data)
    assert code == 0, err
    return {row["source"]["name"]: row for row in json.loads(out)}


def test_a_source_added_during_a_sync_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    hold = threading.Event()
    site = _site(hold)
    with serving(site):
        add = ["sources", "add", "web", site.url("/"), "--rate", "0", "--data-dir", data]
        assert run(capsys, *add, "--name", "h")[0] == 0
        child = _sync_in_another_process(site, data)
        try:
            other = ["sources", "add", "web", site.url("/other/"), "--data-dir", data]
            code, _, err = run(capsys, *other, "--name", "other")
            assert code == 0, err
        finally:
            hold.set()
            out = child.communicate(timeout=120)[0]
        assert child.returncode == 0, out

        sources = _sources(capsys, data)
        assert set(sources) == {"h", "other"}
        assert sources["h"]["last_sync"] is not None


def test_a_source_being_synced_is_neither_synced_twice_nor_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    hold = threading.Event()
    site = _site(hold)
    with serving(site):
        add = ["sources", "add", "web", site.url("/"), "--rate", "0", "--data-dir", data]
        assert run(capsys, *add, "--name", "h")[0] == 0
        child = _sync_in_another_process(site, data)
        try:
            code, out, err = run(capsys, "sync", "--data-dir", data)
            assert code == 0, out + err
            assert "h: skipped: another docchat process is syncing it" in out
            code, out, err = run(capsys, "sources", "rm", "h", "--data-dir", data)
            assert code != 0
            assert "another docchat process is syncing 'h': remove it when that sync ends" in err
        finally:
            hold.set()
            out = child.communicate(timeout=120)[0]
        assert child.returncode == 0, out
        assert site.paths().count("/guide.html") == 1

        assert run(capsys, "sources", "rm", "h", "--data-dir", data)[:2] == (
            0,
            "removed h and 2 documents synced from it\n",
        )
