"""The Convert function's own dependencies (the Office and HTML readers) resolve to wheels for
the arm64 Lambda it runs on (template.yaml: python3.13, arm64) and stay within a measured size
budget beside the docchat layer's. Installs from PyPI as `sam build` does: skipped without it."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.lambda_layout.test_layer import LAYER_BUDGET_MB

REQUIREMENTS = REPO / "functions" / "convert" / "requirements.txt"
# The tags Amazon Linux 2023 (glibc 2.34) runs, as layers/docchat/Makefile installs the layer.
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64", "manylinux_2_34_aarch64")
# Unzipped (bytes of its files), measured 2026-11-27: 67.9 MB (Pillow 13.0.0 and its libraries,
# cryptography, lxml, selectolax, XlsxWriter, the readers). With the docchat layer's 88 MB budget
# (tests/lambda_layout/test_layer.py) that leaves 87 MB of Lambda's 250 MB for a function and
# all its layers to the Powertools layer.
CONVERT_BUDGET_MB = 75
LAMBDA_UNZIPPED_MB = 250
ELF_AARCH64 = 183  # e_machine of an ELF file for ARM 64-bit


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        urllib.request.urlopen("https://pypi.org/simple/selectolax/", timeout=10).close()
    except OSError as exc:
        pytest.skip(f"PyPI is not reachable ({exc}): the arm64 wheels cannot be resolved offline")
    target = tmp_path_factory.mktemp("convert-arm64")
    platforms = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    wheels = ["--only-binary=:all:", "--implementation", "cp", "--python-version", "3.13"]
    into = ["--target", str(target), "--no-compile", "--quiet", "--disable-pip-version-check"]
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", *wheels, *platforms, *into, "-r", REQUIREMENTS],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return target


def test_every_pinned_reader_installs_at_its_pinned_version(installed: Path) -> None:
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", REQUIREMENTS.read_text(), re.MULTILINE)
    found = dict(
        meta.name.removesuffix(".dist-info").rpartition("-")[::2]
        for meta in installed.glob("*.dist-info")
    )
    found = {_normal(name): version for name, version in found.items()}
    assert {_normal(name): version for name, version in pins}.items() <= found.items()


def test_every_native_library_is_built_for_arm64(installed: Path) -> None:
    libraries = [p for p in installed.rglob("*.so*") if p.is_file()]
    machines = {p.relative_to(installed).as_posix(): _elf_machine(p) for p in libraries}

    assert len(machines) > 10  # lxml, selectolax, Pillow, cryptography, cffi
    assert {path for path, machine in machines.items() if machine != ELF_AARCH64} == set()


def test_the_readers_fit_beside_the_layers_in_lambdas_unzipped_limit(installed: Path) -> None:
    size_mb = sum(p.stat().st_size for p in installed.rglob("*") if p.is_file()) / 1e6

    assert size_mb < CONVERT_BUDGET_MB, f"the Convert function is {size_mb:.1f} MB unzipped"
    assert CONVERT_BUDGET_MB + LAYER_BUDGET_MB < LAMBDA_UNZIPPED_MB


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", f"{path} is not an ELF file"
    return int.from_bytes(header[18:20], "little")
