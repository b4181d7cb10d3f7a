"""Starting `docchat` as a separate process, as an MCP client does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.mcpkit import write_pdfs


def docchat(*args: str) -> list[str]:
    """The `docchat` command of this Python (its console script, or the module where the
    environment has no script, as a worktree's small venv)."""
    script = Path(sys.executable).parent / "docchat"
    base = [str(script)] if script.is_file() else [sys.executable, "-m", "docchat.cli"]
    return [*base, *args]


def docchat_env() -> dict[str, str]:
    """The environment of a child docchat: this one (PYTHONPATH included), no model, no cloud."""
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("DOCCHAT_", "ANTHROPIC_", "AWS_"))
    }
    return {**clean, "DOCCHAT_MODEL_PROVIDER": "none"}


def ingested_data_dir(folder: Path) -> Path:
    """A data directory `docchat ingest` made of ferries.pdf and bridges.pdf (real embedder)."""
    data_dir = folder / "data"
    pdfs = write_pdfs(folder / "pdfs")
    ran = subprocess.run(
        docchat("ingest", "--data-dir", str(data_dir), *map(str, pdfs)),
        capture_output=True,
        text=True,
        env=docchat_env(),
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return data_dir
