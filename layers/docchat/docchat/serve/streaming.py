"""Streamed answers: Server-Sent Events that stop the answer when the client goes away.

A streamed answer whose client goes away (the page's Stop, a closed tab) is closed on the
server: the agent's generator and with it the model's stream, so a stopped answer stops
generating.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_END = object()
logger = logging.getLogger(__name__)


class EventStream(StreamingResponse):
    """A Server-Sent Events response (and, as a route's response class, its OpenAPI media type)."""

    media_type = "text/event-stream"


def streamed(request: Request, chunks: Iterator[str], *generators: Iterator[Any]) -> EventStream:
    """`chunks` streamed as SSE while the client listens (see `while_connected`)."""
    return EventStream(while_connected(request, chunks, *generators), headers=SSE_HEADERS)


async def while_connected(
    request: Request, chunks: Iterator[str], *generators: Iterator[Any]
) -> AsyncIterator[str]:
    """`chunks` while the client listens. When it goes away (the page's Stop, a closed tab),
    the generators the chunks come from are closed, outermost first: the agent's `finally`
    blocks run and the model's stream is closed, so the model stops generating."""
    try:
        while not await request.is_disconnected():
            # One event at a time in a worker thread: the agent and the model block.
            chunk = await run_in_threadpool(next, chunks, _END)
            if chunk is _END:
                return
            yield str(chunk)
        logger.info("the client went away: the answer is stopped")
    finally:
        # Cancelled (the server noticed the disconnect first) or not, closing must finish.
        with anyio.CancelScope(shield=True):
            await run_in_threadpool(_close_all, (chunks, *generators))


def _close_all(generators: tuple[Iterator[Any], ...]) -> None:
    for generator in generators:
        close = getattr(generator, "close", None)
        if callable(close):
            close()
