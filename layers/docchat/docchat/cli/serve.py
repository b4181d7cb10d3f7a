"""`docchat serve` (the chat API and page on this machine) and `docchat mcp` (MCP on stdio)."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from docchat.cli import common
from docchat.cli.common import Commands, Opened, require_index
from docchat.config import Settings
from docchat.errors import DocchatError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from docchat.answer.backend import ChatBackend
    from docchat.serve.access import UsersFile
    from docchat.wiring.local import Local


def add_commands(commands: Commands, common_parser: argparse.ArgumentParser) -> None:
    """Add `docchat serve` and `docchat mcp`."""
    serve = commands.add_parser("serve", parents=[common_parser], help="run the chat API locally")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); any other than loopback needs --token",
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
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
    serve.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N",
        help="processes answering requests (default 1): with N, N questions are answered at "
        "once on N cores; each process holds its own models (about 300 MiB)",
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


def run_serve(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Run the chat API (the same app the Lambda runs) on this machine."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors.multiprocess import Multiprocess

    from docchat.serve.access import UsersFile
    from docchat.serve.guards import is_loopback
    from docchat.serve.protocol import DeadlineH11Protocol
    from docchat.wiring.local import as_served, local_backend, open_local

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
        data = as_served(settings, open_local(settings))  # now: a bad one fails at start
        backend = local_backend(settings, data)
        wildcard = args.host in ("0.0.0.0", "::", "")
        # The address it listens on is a name it answers to (127.0.0.2 included).
        hosts = [*args.allowed_host, *([] if wildcard else [args.host])]
        if args.workers > 1 and not settings.embed_threads:
            # Embedding a question on every core would have the workers' threads fight for
            # them (and spin waiting): each worker embeds on its share of the cores.
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
            settings = settings.model_copy(update={"embed_threads": max(1, cores // args.workers)})
        served = Served(settings, tuple(hosts), token, users)
        if args.workers == 1:
            app = served.app(data, backend)
        else:
            # Each worker opens the data directory itself (see `worker_app`).
            data.close()
        where = f"[{args.host}]" if ":" in args.host else args.host
        common.err.print(
            f"docchat serving {settings.data_dir} on http://{where}:{args.port} "
            f"({backend.mode}"
            + (f", {args.workers} worker processes" if args.workers > 1 else "")
            + ")"
            + ("; API calls need a user's token" if users else "")
            + ("" if local or users else "; API calls need the token"),
        )
        if wildcard and not hosts and not settings.allowed_host_names:
            common.err.print(
                "other machines must call it by a name or address given with --allowed-host "
                "(or DOCCHAT_ALLOWED_HOSTS)",
            )
        # Slow or stalled request heads and bodies are cut off (docchat.serve.protocol).
        if args.workers == 1:
            config = uvicorn.Config(app, log_level="warning", http=DeadlineH11Protocol)
            uvicorn.Server(config).run(sockets=[listener])
            return 0
        # Workers are spawned processes sharing the listening socket, each with its own GIL
        # (a question is mostly Python, so threads of one process take turns); uvicorn's
        # supervisor starts again one that dies. What they share is on disk: the index (each
        # worker applies the others' writes before searching, see sqlite_index/live.py), the
        # registry, saved conversations; the first worker to start claims resuming uploads.
        config = uvicorn.Config(
            functools.partial(worker_app, served),
            factory=True,
            workers=args.workers,
            log_level="warning",
            http=DeadlineH11Protocol,
        )
        supervisor = Multiprocess(config, sockets=[listener])
        supervisor.run()
        failed = [p.exitcode for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
        return 2 if failed else 0


@dataclass(frozen=True)
class Served:
    """What `docchat serve` builds its app from: picklable, for spawned worker processes."""

    settings: Settings
    hosts: tuple[str, ...]
    token: str | None
    users: UsersFile | None

    def app(self, local: Local, backend: ChatBackend) -> FastAPI:
        """The guarded local app over `backend` (over `local`), with uploads into `local`
        (made now, not on the first upload: uploads a stopped server left unfinished resume
        at start, by the first process to claim them)."""
        from docchat.wiring.local import guarded_local_app, local_uploads

        uploads = local_uploads(self.settings, local)
        return guarded_local_app(
            self.settings,
            lambda: backend,
            allowed_hosts=self.hosts,
            token=self.token,
            uploads=lambda _: uploads,
            users=self.users,
        )


def worker_app(served: Served) -> FastAPI:
    """One worker process's app (uvicorn's app factory in the worker), its embedding model
    loaded. A worker that cannot open the data directory exits as a startup failure, which
    stops the server instead of being started again and again."""
    from uvicorn.config import STARTUP_FAILURE

    from docchat.adapters.local_embedder import LocalEmbedder
    from docchat.wiring.local import as_served, local_backend

    _end_with(os.getppid())
    try:
        local = as_served(served.settings)
        backend = local_backend(served.settings, local)
        embedder = backend.library.embedder
        if isinstance(embedder, LocalEmbedder):
            # Before this worker accepts a request (the others serve meanwhile): a question
            # that reaches a new worker is then not the one that waits for its model.
            embedder.load()
        return served.app(local, backend)
    except DocchatError as exc:
        common.err.print(f"docchat serve: a worker cannot start: {exc}")
        sys.exit(STARTUP_FAILURE)


def _end_with(parent: int) -> None:
    """Stop this worker (SIGTERM: uvicorn's graceful shutdown) when `parent`, the server's
    supervisor, is gone (killed with SIGKILL, it cannot stop its workers): an orphaned worker
    would go on answering on the port, and a new `docchat serve` could not bind it."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="docchat-supervisor-watch", daemon=True).start()


def _workers(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes from 1 to 64")
    return count


def run_mcp(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Serve MCP on stdin/stdout until the client closes them. The backend is opened first, so
    a wrong data directory is an error on stderr before the client sees a server."""
    import anyio
    from mcp.server.stdio import stdio_server

    from docchat.serve.mcp import mcp_server
    from docchat.wiring.local import local_backend, open_local

    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="docchat mcp: %(levelname)s %(message)s"
    )
    require_index(settings)
    local = open_local(settings)
    opened.closed_later(local.file)
    backend = local_backend(settings, local)
    server = mcp_server(lambda: backend, web_url=settings.web_url)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    common.err.print(f"docchat mcp serving {settings.data_dir} ({backend.mode}) on stdio")
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
