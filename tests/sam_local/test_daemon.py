"""Where Docker cannot start, `make sam-local` says why (dockerd's own words) instead of
skipping: the daemon helper against stand-ins for `docker` and `dockerd` on PATH."""

from __future__ import annotations

from pathlib import Path

import pytest
from infra.sam_local import daemon
from infra.sam_local.tools import SetupError


def _tool(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


def test_daemon_that_exits_fails_with_dockerds_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no daemon answering, and a dockerd that cannot start on this machine
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "docker", "echo 'Cannot connect to the Docker daemon' >&2; exit 1")
    _tool(bin_dir, "dockerd", "echo 'failed to start daemon: iptables not found' >&2; exit 1")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setattr(daemon.os, "geteuid", lambda: 0)

    # When the run asks for a daemon, Then it fails with dockerd's reason
    with (
        pytest.raises(SetupError, match=r"dockerd exited with 1:\n.*iptables not found"),
        daemon.docker_daemon(tmp_path / "state"),
    ):
        pass


def test_daemon_already_running_is_used_and_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a daemon that answers (and a dockerd that must not be started)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "docker", "echo 20.10.24")
    _tool(bin_dir, "dockerd", f"touch {tmp_path / 'started'}; exit 1")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")

    with daemon.docker_daemon(tmp_path / "state"):
        assert daemon.daemon_answers() is None

    assert not (tmp_path / "started").exists()
