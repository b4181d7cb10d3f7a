"""`docchat serve` (the chat API and page on this machine) and `docchat mcp` (MCP on stdio)."""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from pathlib import Path
from typing import cast

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.cli import common
from docchat.cli.common import Commands, require_index
from docchat.config import Settings
from docchat.errors import DocchatError


def add_commands(commands: Commands, common_parser: argparse.ArgumentParser) -> None:
    """Add `docchat serve` and `docchat mcp`."""
    serve = commands.add_parser("serve", parents=[common_parser], help="run the chat API locally")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); any other than loopback needs --token",
    )
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--token",
        default=None,
        help="bearer token every API call must send (default: $DOCCHAT_API_TOKEN)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to answer besides localhost (repeatable; * for any; "
        "also $DOCCHAT_ALLOWED_HOSTS)",
    )
    serve.add_argument(
        "--users",
        type=Path,
        default=None,
        metavar="FILE",
        help="a JSON users file: each user's token (SHA-256) and the collections they may "
        "read and write; every call then needs one of its tokens",
    )
    serve.set_defaults(run=run_serve)

    mcp = commands.add_parser(
        "mcp",
        parents=[common_parser],
        help="serve the documents to other agents over MCP on stdin/stdout",
        description="The Model Context Protocol server (search, read_pages, list_documents, "
        "ask, and the pages as resources) on stdin/stdout, for an MCP client to start. "
        "Nothing but the protocol is written to stdout; logs go to stderr.",
    )
    mcp.set_defaults(run=run_mcp)


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the chat API (the same app the Lambda runs) on this machine."""
    import uvicorn

    from docchat.serve.access import UsersFile
    from docchat.serve.guards import is_loopback
    from docchat.serve.protocol import DeadlineH11Protocol
    from docchat.wiring.local import guarded_local_app, local_backend, local_uploads_for

    token = settings.api_token if args.token is None else args.token
    local = is_loopback(args.host)
    users = UsersFile.load(args.users) if args.users else None
    if not local and not token and users is None:
        raise DocchatError(
            f"--host {args.host} lets other machines reach docchat and its documents: give "
            "it an API token with --token or DOCCHAT_API_TOKEN (clients send "
            "'Authorization: Bearer <token>'; the page asks for it once), or serve on "
            "127.0.0.1"
        )
    listener = bind(args.host, args.port)  # before anything says it is serving
    with listener:
        backend = local_backend(settings)  # opened now: a bad data directory fails at start
        wildcard = args.host in ("0.0.0.0", "::", "")
        # The address it listens on is a name it answers to (127.0.0.2 included).
        hosts = [*args.allowed_host, *([] if wildcard else [args.host])]
        # Made now, not on the first upload: uploads a stopped server left unfinished resume
        # at start.
        uploads = local_uploads_for(settings)(backend)
        app = guarded_local_app(
            settings,
            lambda: backend,
            allowed_hosts=hosts,
            token=token,
            uploads=lambda _: uploads,
            users=users,
        )
        where = f"[{args.host}]" if ":" in args.host else args.host
        common.err.print(
            f"docchat serving {settings.data_dir} on http://{where}:{args.port} "
            f"({backend.mode})"
            + ("; API calls need a user's token" if users else "")
            + ("" if local or users else "; API calls need the token"),
            soft_wrap=True,
        )
        if wildcard and not hosts and not settings.allowed_host_names:
            common.err.print(
                "other machines must call it by a name or address given with --allowed-host "
                "(or DOCCHAT_ALLOWED_HOSTS)",
                soft_wrap=True,
            )
        # Slow or stalled request heads and bodies are cut off (docchat.serve.protocol).
        config = uvicorn.Config(app, log_level="warning", http=DeadlineH11Protocol)
        uvicorn.Server(config).run(sockets=[listener])
    return 0


def run_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve MCP on stdin/stdout until the client closes them. The backend is opened first, so
    a wrong data directory is an error on stderr before the client sees a server."""
    import anyio
    from mcp.server.stdio import stdio_server

    from docchat.serve.mcp import mcp_server
    from docchat.wiring.local import local_backend

    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="docchat mcp: %(levelname)s %(message)s"
    )
    require_index(settings)
    backend = local_backend(settings)
    common.closed_later(cast(SqliteIndex, backend.library.index))
    server = mcp_server(lambda: backend, web_url=settings.web_url)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    common.err.print(
        f"docchat mcp serving {settings.data_dir} ({backend.mode}) on stdio", soft_wrap=True
    )
    anyio.run(serve)
    return 0


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, or a DocchatError saying why not (e.g. the port is taken)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise DocchatError(f"cannot serve on {host!r}: {exc.strerror}; check --host") from exc
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError as exc:
        listener.close()
        raise DocchatError(
            f"cannot serve on {host}:{port}: {exc.strerror or exc}; is another server using "
            "it? Stop it or choose another --port"
        ) from exc
    return listener
