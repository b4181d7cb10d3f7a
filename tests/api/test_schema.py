"""Schemathesis over the OpenAPI schema, against `docchat serve`'s app under a real uvicorn on
127.0.0.1, with all of its checks: no 5xx, every status, content type, header and body as
documented, schema-valid requests taken and invalid ones refused, 405 with the right `Allow`,
resources that exist after they are made and are gone after they are deleted.

Bounded: a few examples per operation (`--max-examples`) and a time budget (`--max-time`); the
coverage phase adds the schema's boundary cases. The run's seed is printed, so a failure can be
replayed with `st run ... --seed <seed>`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.guarded import GuardedServer
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # about a minute on two cores

MAX_EXAMPLES = 15
MAX_TIME_S = 40  # fuzzing and stateful phases repeat until it is spent


def schemathesis_command(url: str) -> list[str]:
    """The run: every check, bounded in examples and time, one worker (two cores are shared)."""
    return [
        *(sys.executable, "-m", "schemathesis.cli", "run", f"{url}/openapi.json"),
        *("--checks", "all", "--workers", "1", "--request-timeout", "30"),
        *("--max-examples", str(MAX_EXAMPLES), "--max-time", str(MAX_TIME_S)),
    ]


def test_schemathesis_finds_nothing_wrong(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path]),
        # What a valid PDF upload is: the schema's `format: binary` cannot say
        "SCHEMATHESIS_HOOKS": "tests.api.schemathesis_hooks",
        "NO_COLOR": "1",
    }
    with GuardedServer(tmp_path / "data") as server:
        run = subprocess.run(
            schemathesis_command(server.url),
            cwd=tmp_path,  # its cache folder (.schemathesis) goes there
            env=env,
            capture_output=True,
            text=True,
            timeout=MAX_TIME_S * 4,
        )

    report = run.stdout[-6000:] + run.stderr[-2000:]
    print(report)
    assert run.returncode == 0, report
    assert "Tested: 28" in run.stdout  # every operation of the schema
