"""Ctrl-C at any moment of `docchat ingest`'s first seconds prints one line, "interrupted", and no
traceback (issue 44): a terminal sends SIGINT to the whole foreground process group, which holds
the command, the forkserver its conversions come from and the converting child."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.sandbox import DOCCHAT, env
from tests.pdfgen import make_pdf


@pytest.mark.parametrize("after_s", [0.1, 0.3, 0.6, 1.0, 1.5, 2.5])
def test_ctrl_c_early_in_an_ingest_prints_one_line(tmp_path: Path, after_s: float) -> None:
    # Given an ingest of a few documents, started as a terminal starts it (a group of its own)
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for n in range(3):
        pages = [[("h1", f"Part {p}"), ("body", f"Page {p} of document {n}.")] for p in range(40)]
        (folder / f"doc{n}.pdf").write_bytes(make_pdf(pages))
    command = subprocess.Popen(
        [str(DOCCHAT), "ingest", "--data-dir", str(tmp_path / "data"), str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
        start_new_session=True,
    )
    # When Ctrl-C reaches its process group
    time.sleep(after_s)
    os.killpg(command.pid, signal.SIGINT)
    _out, err = command.communicate(timeout=60)
    # Then it stops with one line and no traceback, from no process of the group
    stderr = err.decode()
    assert "Traceback" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr
    if command.returncode != 130:
        # it finished before the signal (exit 0), or the signal came as it exited, which ends a
        # finished process silently (killed by SIGINT) as it ends any program
        assert command.returncode in (0, -signal.SIGINT), (command.returncode, stderr)
        assert stderr.count(": indexed in ") == 3, stderr
        return
    assert stderr.strip().splitlines()[-1:] == ["interrupted"], stderr
