"""The chat API (FastAPI): the same app under uvicorn locally and behind the Lambda Web Adapter.

Routers, one per concern (docchat.serve.routes): the page and the server's state (meta),
documents, conversations, the chat stream (chat) and the OpenAI-compatible API (openai), over
one AppState (docchat.serve.state). Every error reaches the client in one JSON shape with its
request id (docchat.serve.errors); the server's own limits (body sizes, HEAD wherever GET) are
middleware (docchat.serve.middleware). The local server (docchat.wiring.local) adds
`guards.LocalGuard`: loopback Host names only, no writes from other sites, a bearer token when
one is configured.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.middleware import Middleware
from starlette.routing import Route

from docchat import VERSION
from docchat.answer.backend import ChatBackend
from docchat.answer.usage import UsageLedger
from docchat.ingest.uploads import MAX_UPLOAD_BYTES
from docchat.ports import ConversationStore
from docchat.serve.access import AccessOf, local_admin
from docchat.serve.errors import Unexpected, install_error_handlers
from docchat.serve.mcp_mount import McpMount
from docchat.serve.middleware import BodyLimit, HeadAsGet
from docchat.serve.observe import RequestIds
from docchat.serve.routes import ROUTERS
from docchat.serve.state import (
    WEB,
    AppState,
    FilesFactory,
    Parts,
    SignIn,
    UploadsFactory,
    local_files,
    no_origins,
)

__all__ = ["MAX_BODY_BYTES", "MAX_UPLOAD_BYTES", "SignIn", "UploadsFactory", "create_app"]

MAX_BODY_BYTES = 512 * 1024


def create_app(
    backend: Callable[[], ChatBackend],
    *,
    uploads: UploadsFactory | None = None,
    files: FilesFactory = local_files,
    sign_in: Callable[[], SignIn] = SignIn,
    conversations: Callable[[], ConversationStore] | None = None,
    usage: Callable[[], UsageLedger] | None = None,
    page_origins: Callable[[], Sequence[str]] = no_origins,
    access_of: AccessOf = local_admin,
    model_lifecycle: Callable[[], dict[str, Any]] | None = None,
    sources: Callable[[], dict[str, Any]] | None = None,
    middleware: Sequence[Middleware] = (),
) -> FastAPI:
    """The app over these parts (docchat.serve.state.Parts says what each is), each built on
    first use so that start-up stays light. `middleware` goes inside the request ids, so that
    its refusals carry one (the local server's guard)."""
    parts = Parts(
        backend=backend,
        uploads=uploads,
        files=files,
        sign_in=sign_in,
        conversations=conversations,
        usage=usage,
        page_origins=page_origins,
        access_of=access_of,
        model_lifecycle=model_lifecycle,
        sources=sources,
    )
    upload_limit = (
        MAX_UPLOAD_BYTES,
        f"the file is larger than the {MAX_UPLOAD_BYTES // (1024 * 1024)} MB an upload may "
        "have: split the document",
    )
    state = AppState(parts)
    mcp = McpMount(lambda: state.backend, access_of=access_of)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.running():
            yield

    app = FastAPI(
        lifespan=lifespan,
        title="docchat",
        version=VERSION,
        middleware=[
            Middleware(RequestIds),
            Middleware(Unexpected),
            *middleware,
            Middleware(HeadAsGet),
            Middleware(
                BodyLimit,
                limit=MAX_BODY_BYTES,
                larger={("POST", "/documents"): upload_limit},
            ),
        ],
    )
    app.state.docchat = state
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    # MCP's streamable HTTP transport (POST, GET, DELETE) for other agents, as the API's user.
    app.router.routes.append(Route("/mcp", endpoint=mcp))
    app.mount("/static", StaticFiles(directory=WEB, check_dir=False), name="static")
    return app
