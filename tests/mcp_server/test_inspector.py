"""The MCP Inspector's command-line mode (npm @modelcontextprotocol/inspector) lists and calls
docchat's tools over stdio, as `docchat mcp`.

`make inspector` installs it into .inspector/ (not in git); MCP_INSPECTOR_DIR names another
folder holding it (node_modules/@modelcontextprotocol/inspector). It runs offline once installed:
npx is told not to install anything nor to reach the registry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.mcp_server.spawn import docchat, docchat_env

PACKAGE = "@modelcontextprotocol/inspector"


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The folder the Inspector is installed in."""
    if shutil.which("npx") is None:
        pytest.skip("npx (Node.js) is not installed: the MCP Inspector runs on it")
    folder = Path(os.environ.get("MCP_INSPECTOR_DIR") or REPO / ".inspector")
    if not (folder / "node_modules" / PACKAGE / "package.json").is_file():
        pytest.skip(f"the MCP Inspector is not installed in {folder}: `make inspector` installs it")
    return folder


def _inspect(inspector: Path, data_dir: Path, tmp_path: Path, *method: str) -> dict[str, Any]:
    """The Inspector CLI's JSON output for one method called on `docchat mcp`."""
    server_env = ["DOCCHAT_MODEL_PROVIDER=none"]
    if "PYTHONPATH" in os.environ:  # a worktree's code, as in this process
        server_env.append(f"PYTHONPATH={os.environ['PYTHONPATH']}")
    command = [
        *("npx", "--no-install", PACKAGE, "--cli"),
        *(arg for variable in server_env for arg in ("-e", variable)),
        *docchat("mcp", "--data-dir", str(data_dir)),
        *method,
    ]
    env = {
        **docchat_env(),
        "HOME": str(
            tmp_path
        ),  # npx's cache, and the Inspector's catalog, stay in the test's folder
        "npm_config_offline": "true",
        "NPM_CONFIG_UPDATE_NOTIFIER": "false",
    }
    ran = subprocess.run(
        command, cwd=inspector, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    found: dict[str, Any] = json.loads(ran.stdout)
    return found


def test_inspector_lists_docchats_tools(inspector: Path, data_dir: Path, tmp_path: Path) -> None:
    listed = _inspect(inspector, data_dir, tmp_path, "--method", "tools/list")

    tools = {t["name"]: t for t in listed["tools"]}
    assert list(tools) == ["search", "read_pages", "list_documents", "ask"]
    assert tools["read_pages"]["inputSchema"]["required"] == ["doc_id", "first_page", "last_page"]
    assert tools["search"]["annotations"]["readOnlyHint"] is True


def test_inspector_calls_search_and_ask(inspector: Path, data_dir: Path, tmp_path: Path) -> None:
    found = _inspect(
        inspector,
        data_dir,
        tmp_path,
        *("--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=return ticket"),
    )
    asked = _inspect(
        inspector,
        data_dir,
        tmp_path,
        *("--method", "tools/call", "--tool-name", "ask"),
        *("--tool-arg", "question=How much is a return ticket?"),
    )

    top = found["structuredContent"]["passages"][0]
    assert (top["file_name"], top["page_start"], top["text"]) == (
        "ferries.pdf",
        2,
        "A return ticket costs twelve euros.",
    )
    assert asked["structuredContent"]["mode"] == "extractive"
    citation = asked["structuredContent"]["citations"][0]
    assert (citation["file_name"], citation["page"], citation["quote"]) == (
        "ferries.pdf",
        2,
        "A return ticket costs twelve euros.",
    )
