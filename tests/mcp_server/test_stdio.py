"""`docchat mcp` as an MCP client starts it: a subprocess speaking the protocol on stdin/stdout,
over a data directory `docchat ingest` built with the real embedder, driven by the official SDK's
client (in the handshake era desktop clients speak, and in the SDK's own default)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.mcp_server.spawn import docchat, docchat_env


def _session(data_dir: Path, mode: str) -> dict[str, Any]:
    """One `docchat mcp` session: tools listed, each called, a page read, two bad calls."""
    [command, *args] = docchat("mcp", "--data-dir", str(data_dir))
    server = StdioServerParameters(command=command, args=args, env=docchat_env())

    async def run() -> dict[str, Any]:
        async with Client(server, mode=mode) as client:
            found: dict[str, Any] = {"tools": await client.list_tools()}
            found["documents"] = await client.call_tool("list_documents", {})
            ferries = next(
                d["doc_id"]
                for d in found["documents"].structured_content["documents"]
                if d["file_name"] == "ferries.pdf"
            )
            found["ferries"] = ferries
            found["search"] = await client.call_tool("search", {"query": "return ticket"})
            found["read"] = await client.call_tool(
                "read_pages", {"doc_id": ferries, "first_page": 1, "last_page": 2}
            )
            found["ask"] = await client.call_tool("ask", {"question": "What is a return fare?"})
            found["page"] = await client.read_resource(f"docchat://documents/{ferries}/pages/2")
            found["bad"] = await client.call_tool("read_pages", {"doc_id": ferries})
            found["unknown"] = await client.call_tool(
                "read_pages", {"doc_id": "no-such-doc", "first_page": 1, "last_page": 1}
            )
            return found

    result: dict[str, Any] = anyio.run(run)
    return result


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_docchat_mcp_lists_and_calls_each_tool_over_stdio(data_dir: Path, mode: str) -> None:
    found = _session(data_dir, mode)

    ferries = found["ferries"]
    assert [t.name for t in found["tools"].tools] == [
        "search",
        "read_pages",
        "list_documents",
        "ask",
    ]
    names = {d["file_name"] for d in found["documents"].structured_content["documents"]}
    assert names == {"ferries.pdf", "bridges.pdf"}
    top = found["search"].structured_content["passages"][0]
    assert (top["doc_id"], top["page_start"], top["text"]) == (
        ferries,
        2,
        "A return ticket costs twelve euros.",
    )
    assert top["link"] == f"http://127.0.0.1:8000/#doc={ferries}&page=2"
    pages = found["read"].structured_content["pages"]
    assert [p["text"] for p in pages] == [
        "# Ferries\n\nThe ferry to the island leaves every hour.",
        "## Fares\n\nA return ticket costs twelve euros.",
    ]
    answer = found["ask"].structured_content
    assert answer["mode"] == "extractive"
    assert next((c["doc_id"], c["page"], c["quote"]) for c in answer["citations"]) == (
        ferries,
        2,
        "A return ticket costs twelve euros.",
    )
    assert found["page"].contents[0].text == "## Fares\n\nA return ticket costs twelve euros."
    assert found["bad"].is_error
    assert (
        found["bad"]
        .content[0]
        .text.startswith(
            "Invalid input for read_pages: first_page: Field required; last_page: Field required."
        )
    )
    assert found["unknown"].is_error
    assert found["unknown"].content[0].text == (
        "no document with id 'no-such-doc': list_documents lists the documents you can read"
    )


def test_docchat_mcp_writes_nothing_but_the_protocol_to_stdout(data_dir: Path) -> None:
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {"question": "How often does the ferry leave?"}},
        },
    ]
    process = subprocess.Popen(
        docchat("mcp", "--data-dir", str(data_dir)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**docchat_env(), "DOCCHAT_WEB_URL": "https://docs.example/chat/"},
    )
    watchdog = threading.Timer(120, process.kill)
    watchdog.start()
    try:
        assert process.stdin and process.stdout
        process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        process.stdin.flush()
        # The answer to the call comes before stdin closes (EOF ends the session, and with it
        # any call still running).
        answered = [process.stdout.readline() for _ in range(2)]
        process.stdin.close()
        process.wait(timeout=60)
        rest, stderr = process.stdout.read(), process.stderr.read() if process.stderr else ""
    finally:
        watchdog.cancel()
        process.kill()

    assert process.returncode == 0, stderr
    messages = [json.loads(line) for line in [*answered, *rest.splitlines()]]  # JSON-RPC only
    assert [m.get("id") for m in messages] == [1, 2]
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    answer = messages[1]["result"]["structuredContent"]
    assert "leaves every hour" in answer["answer"]
    assert answer["citations"][0]["link"].startswith("https://docs.example/chat/#doc=")
    assert f"docchat mcp serving {data_dir} (extractive) on stdio" in stderr


def test_docchat_mcp_without_an_index_says_so_on_stderr_only(tmp_path: Path) -> None:
    ran = subprocess.run(
        docchat("mcp", "--data-dir", str(tmp_path / "nothing")),
        input="",
        capture_output=True,
        text=True,
        env=docchat_env(),
        timeout=60,
        check=False,
    )

    assert ran.returncode == 2
    assert ran.stdout == ""
    assert "there is no docchat index in" in ran.stderr
    assert "docchat ingest" in ran.stderr
    assert not (tmp_path / "nothing").exists()
