"""Paths and commands shared by the stand-in image, the daemon and the SAM runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PYTHON_VERSION = "3.13"
# Where the SAM CLI keeps its bundled runtime interface emulator: `sam local` copies it into
# every container it starts (/var/rapid/aws-lambda-rie), so the base image needs none of its own.
RIE_IN_SAMCLI = "samcli/local/rapid/aws-lambda-rie-x86_64"


class SetupError(RuntimeError):
    """Something this machine lacks for `sam local`; the message says what and what to do."""


def cache_dir() -> Path:
    """What is built once and kept between runs (the Powertools layer, the rootfs log)."""
    configured = os.environ.get("DOCCHAT_SAM_LOCAL_CACHE")
    path = Path(configured) if configured else Path.home() / ".cache" / "docchat" / "sam-local"
    path.mkdir(parents=True, exist_ok=True)
    return path


def sam_binary() -> Path:
    configured = os.environ.get("DOCCHAT_SAM")
    sam = Path(configured) if configured else REPO / ".venv-sam" / "bin" / "sam"
    if not sam.is_file():
        raise SetupError(f"aws-sam-cli not found at {sam}: `make install` puts it in .venv-sam")
    return sam


def rie_binary() -> Path:
    sam = sam_binary().resolve()
    found = sorted(sam.parent.parent.glob(f"lib/python3*/site-packages/{RIE_IN_SAMCLI}"))
    if not found:
        raise SetupError(f"{RIE_IN_SAMCLI} is missing from the aws-sam-cli install beside {sam}")
    return found[0]


def run(
    command: list[str], *, timeout: float, log: Path | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """Run `command`; a failure raises SetupError with the end of its output (also in `log`)."""
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )
    output = f"{result.stdout}\n{result.stderr}"
    if log is not None:
        with log.open("a") as out:
            out.write(f"$ {' '.join(command)}\n{output}\n")
    if result.returncode != 0:
        raise SetupError(
            f"{' '.join(command[:6])} ... failed with {result.returncode}:\n{output[-4000:]}"
        )
    return result


def apt_install(package: str, log: Path) -> None:
    """Debian's `package`, reading the package lists first if they are too old or absent."""
    if os.geteuid() != 0:
        raise SetupError(f"{package} is not installed: `apt-get install {package}` needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", package]
    try:
        run(install, timeout=600, log=log, env=env)
    except SetupError:  # a fresh machine may have no package lists yet
        run(["apt-get", "update", "-qq"], timeout=600, log=log, env=env)
        run(install, timeout=600, log=log, env=env)
