"""Real storage faults for the CLI and the server: a small tmpfs, full or read-only, mounted in a
private mount namespace (`unshare -m --propagation private`, as root), so the machine's own
file systems are never touched. Tests that need one skip with the reason where it cannot be made.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

DOCCHAT = Path(sys.executable).parent / "docchat"


def require_namespaces() -> None:
    """Skip unless this process may mount a tmpfs in a private mount namespace."""
    if os.geteuid() != 0:
        pytest.skip("a read-only or full file system needs root (mount in a private namespace)")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode().strip()}")


def mount_script(
    mount: Path, *, size: str, seed: Path | None = None, read_only: bool = False
) -> str:
    """Shell lines that mount a tmpfs of `size` on `mount`, copy `seed` into it, and remount it
    read-only if asked."""
    lines = [f"mount -t tmpfs -o size={size} docchat-test {shlex.quote(str(mount))}"]
    if seed is not None:
        lines.append(f"cp -a {shlex.quote(str(seed))} {shlex.quote(str(mount))}/")
    if read_only:
        lines.append(f"mount -o remount,ro {shlex.quote(str(mount))}")
    return " && ".join(lines)


def env() -> dict[str, str]:
    """The environment of a child docchat: no model, no cloud."""
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("DOCCHAT_", "ANTHROPIC_", "AWS_"))
    }
    return {**clean, "DOCCHAT_MODEL_PROVIDER": "none"}


def run_inside(script: str, *, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a shell script in a private mount namespace."""
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(),
        check=False,
    )


def docchat(*args: str | Path) -> str:
    return " ".join(shlex.quote(str(a)) for a in (DOCCHAT, *args))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerInside:
    """`docchat serve` on 127.0.0.1 in a private mount namespace prepared by `setup`."""

    def __init__(self, setup: str, data_dir: Path) -> None:
        self.port = free_port()
        serve = docchat("serve", "--data-dir", data_dir, "--port", str(self.port))
        self.process = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", f"{setup} && exec {serve}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"docchat serve ended: {self.process.communicate()}")
            try:
                self.http.get("/config")
                return
            except httpx.TransportError:
                assert time.monotonic() < deadline, "docchat serve did not start"
                time.sleep(0.1)

    def inside(self, *command: str) -> str:
        """Run a command in the server's mount namespace (to see its tmpfs)."""
        return subprocess.run(
            ["nsenter", "-t", str(self.process.pid), "-m", *command],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout

    def stop(self) -> str:
        self.http.close()
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err
