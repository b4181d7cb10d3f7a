"""The MCP server at /mcp inside the chat API, built on the first request that reaches it.

The MCP SDK takes about 0.7 s to import on Python 3.13 (`bench/chat.py`'s cold start row: the
chat Lambda's start-up grew from +0.2 s to +1.1 s over a bare FastAPI app when /mcp was added),
and the page and /chat never need it. So this module does not import it: the API's lifespan
starts a task that waits for the first /mcp request, then imports docchat.serve.mcp, builds its
app and runs the SDK's session manager until the lifespan ends (in that one task, as anyio
requires of the task group it opens).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import anyio
from starlette.types import Receive, Scope, Send

from docchat.answer.backend import ChatBackend
from docchat.serve.access import AccessOf
from docchat.serve.errors import error_response

if TYPE_CHECKING:
    from starlette.applications import Starlette

logger = logging.getLogger(__name__)


class McpMount:
    """/mcp: each request answered for the caller's access as the routes name it (`access_of`: a
    users file, Cognito groups), links to the page the caller reached. Served
    while `running` (the API's lifespan) is open; outside it /mcp answers 503."""

    def __init__(self, backend: Callable[[], ChatBackend], *, access_of: AccessOf):
        self.backend = backend
        self.access_of = access_of
        self._app: Starlette | None = None
        self._wanted: anyio.Event | None = None
        self._ready: anyio.Event | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve /mcp while the context is open, loading the MCP server on first use."""
        wanted, ready, done = anyio.Event(), anyio.Event(), anyio.Event()
        self._wanted, self._ready = wanted, ready
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._serve, wanted, ready, done)
            try:
                yield
            finally:
                self._wanted = self._ready = None
                done.set()
                wanted.set()

    async def _serve(self, wanted: anyio.Event, ready: anyio.Event, done: anyio.Event) -> None:
        try:
            await wanted.wait()
            if done.is_set():
                return
            try:
                app = await self._build()
            except Exception:
                logger.exception("the MCP server could not be built")
                return
            async with app.router.lifespan_context(app):
                self._app = app
                ready.set()
                try:
                    await done.wait()
                finally:
                    self._app = None
        finally:
            ready.set()  # nobody waits for a server that will not come

    async def _build(self) -> Starlette:
        # The import (the slow part) runs in a worker thread, so that requests to the other
        # routes go on meanwhile.
        served = await anyio.to_thread.run_sync(importlib.import_module, "docchat.serve.mcp")
        security = importlib.import_module("mcp.server.transport_security")
        app: Starlette = served.mcp_http_app(
            self.backend,
            access_of=self.access_of,
            web_url="",
            # The API's own guard (the local server's Host check, API Gateway in the cloud)
            # decides which names reach it; the SDK's loopback-only default would refuse the
            # stack's own domain.
            transport_security=security.TransportSecuritySettings(
                enable_dns_rebinding_protection=False
            ),
        )
        return app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        wanted, ready = self._wanted, self._ready
        if wanted is None or ready is None:
            message = "MCP is served while the server runs (under uvicorn with its lifespan)"
            await error_response(503, message)(scope, receive, send)
            return
        wanted.set()
        await ready.wait()
        app = self._app
        if app is None:
            message = "the MCP server could not start: the server's log says why"
            await error_response(503, message)(scope, receive, send)
            return
        await app(scope, receive, send)
