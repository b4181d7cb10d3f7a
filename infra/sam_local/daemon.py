"""Docker for `sam local`: Debian's docker.io installed when dockerd is absent, and a daemon
started for the run and stopped after it (one already running is used and left running)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from infra.sam_local.tools import SetupError, apt_install

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30


def ensure_docker(log: Path) -> None:
    """Debian's Docker (docker.io: dockerd, containerd, runc) when dockerd is not installed."""
    if shutil.which("dockerd") and shutil.which("docker"):
        return
    if not shutil.which("apt-get"):
        raise SetupError("dockerd is not installed and there is no apt-get to install docker.io")
    apt_install("docker.io", log)


def daemon_answers() -> str | None:
    """None when `docker info` reaches a daemon, else why not."""
    if not shutil.which("docker"):
        return "no docker client on PATH"
    probe = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return None if probe.returncode == 0 else (probe.stderr.strip() or "docker info failed")


@contextmanager
def docker_daemon(state: Path) -> Iterator[None]:
    """A Docker daemon for the `with` block: the running one, or dockerd started here (its log
    in `state`) and stopped at the end. SetupError says exactly why it could not start."""
    state.mkdir(parents=True, exist_ok=True)
    ensure_docker(state / "apt.log")
    if daemon_answers() is None:
        yield
        return
    if os.geteuid() != 0:
        raise SetupError("no Docker daemon is running and starting dockerd needs root")
    log = state / "dockerd.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            ["dockerd", "--pidfile", str(state / "dockerd.pid")],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_up(process, log)
        yield
    finally:
        _stop(process)


def _wait_until_up(process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    why = "not started"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise SetupError(f"dockerd exited with {process.returncode}:\n{tail}")
        why = daemon_answers() or ""
        if not why:
            return
        time.sleep(0.5)
    raise SetupError(f"dockerd did not answer within {START_TIMEOUT_S} s: {why}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)  # dockerd stops its containers, then containerd
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
