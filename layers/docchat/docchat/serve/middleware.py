"""The server's own limits on requests, as ASGI middleware: body sizes, and HEAD wherever GET.

Bodies are counted as they arrive, so a chunked body (no Content-Length) is refused at its limit
too, and a declared length past the limit is refused before a byte is read. The refusal is the
API's error shape, with `Connection: close` so that the server stops reading the rest.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docchat.serve.errors import refusal

CLOSE = {"Connection": "close"}


class BodyTooLarge(HTTPException):
    """A body passed its route's limit while it was read (FastAPI passes HTTPExceptions raised
    while it reads a body on as they are; anything else would become a 400)."""

    def __init__(self, message: str) -> None:
        super().__init__(413, message, headers=CLOSE)


class BodyLimit:
    """Refuses (413) a request body larger than its route's limit: `limit`, or the one
    `larger` gives its method and path."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limit: int,
        larger: Mapping[tuple[str, str], tuple[int, str]],
    ) -> None:
        self.app = app
        self.limit = limit
        self.larger = larger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = (str(scope["method"]), str(scope["path"]).rstrip("/") or "/")
        limit, message = self.larger.get(
            route, (self.limit, f"the request body is larger than {self.limit} bytes")
        )
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await refusal(scope, 413, message, headers=CLOSE)(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message_in = await receive()
            if message_in["type"] == "http.request":
                received += len(message_in.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(message)
            return message_in

        await self.app(scope, counted, send)


class HeadAsGet:
    """Answers HEAD wherever GET is answered: the GET's status and headers, without its body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
