"""The `make sam-local` pass, once per test run (shared by the xdist workers)."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest

# One id per run, the same in every xdist worker (pytest-xdist sets it); without xdist, ours.
_RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex


@pytest.fixture(scope="session")
def sam_run() -> dict[str, Any]:
    """Where Docker cannot start (or the image cannot be built) every test fails with the
    reason: a machine without Docker must not pass this folder by skipping it."""
    # Imported here: `make unit` collects this folder (and deselects it) without paying for it.
    from infra.sam_local.tools import SetupError

    from tests.sam_local.run import shared_pass

    root = Path(os.environ.get("DOCCHAT_SAM_LOCAL_WORK", tempfile.gettempdir()))
    try:
        return shared_pass(root, _RUN_ID)
    except SetupError as exc:
        pytest.fail(f"sam local cannot run on this machine: {exc}", pytrace=False)
