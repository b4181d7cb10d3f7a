"""Debian's Chromium driven by Playwright for Python, as every page test launches it (Playwright's
own browser download never works here). Importing this skips the importing test module, with
the reason, where Playwright or Chromium is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="Playwright for Python is not installed: pip install playwright (no browser download "
    "needed; the test uses Debian's chromium)",
)
CHROMIUM = os.environ.get("DOCCHAT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip(
        f"no Chromium at {CHROMIUM}: apt-get install -y chromium, or set DOCCHAT_CHROMIUM",
        allow_module_level=True,
    )

expect = sync_api.expect
# Headless as root on a machine with no network beyond loopback: no sandbox, no GPU, and none
# of Chromium's own background connections.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launched_chromium(*extra_flags: str) -> Iterator[Any]:
    """A running Chromium for a fixture to yield; closed when the generator ends."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, *extra_flags])
        yield browser
        browser.close()
