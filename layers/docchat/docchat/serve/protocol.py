"""The HTTP protocol docchat runs uvicorn with: uvicorn's own (h11), with deadlines for a
request's head and body, so that a client that stalls or trickles (slowloris) cannot hold a
connection forever.

uvicorn times out only idle keep-alive connections: a connection that sends its head slowly, or
announces a body and stops halfway, stays open until the client leaves (issue 27: 50 of 50 still
open after 62 s). Here, as Apache's mod_reqtimeout does (`header=20-40,MinRate=500
body=20,MinRate=500`):
- the head (request line and headers) must be complete within HEAD_TIMEOUT_S of its first byte
  (of the connection, for its first request), however it trickles in;
- the body must keep coming: BODY_TIMEOUT_S, plus a second for every BODY_MIN_RATE bytes that
  arrived. Time the server itself stopped reading (its buffer full while the app reads slowly)
  does not count.
A request that misses its deadline gets 408 in the API's error shape, if nothing was answered
yet, and the connection is closed: after a 408, lingering (as nginx's lingering_close does),
writing shut and what the client still sends read and dropped for up to LINGER_S, because
closing a socket with unread bytes, or a byte arriving at a closed one, makes the kernel answer
with a reset, and a reset can drop the 408 before the client reads it. Once a request is read,
its answer may take as long as it takes (a streamed answer can last minutes).

`docchat serve` runs it (docchat.cli), and so does the chat function
(functions/chat/run.sh: `uvicorn --http docchat.serve.protocol:DeadlineH11Protocol`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 20.0
BODY_TIMEOUT_S = 20.0
BODY_MIN_RATE = 500  # bytes per second that extend the body's deadline by one second
LINGER_S = 2.0
logger = logging.getLogger(__name__)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's head and body."""

    head_timeout_s = HEAD_TIMEOUT_S
    body_timeout_s = BODY_TIMEOUT_S
    body_min_rate = BODY_MIN_RATE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._first = True  # the connection's first head counts from when it opened
        self._head_by: float | None = None
        self._body_from: float | None = None
        self._body_bytes = 0
        self._lingering = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # read and dropped until the close
        if self.conn.their_state is h11.SEND_BODY:
            self._body_bytes += len(data)
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Set the deadline of what the connection is waiting for from the client, if anything."""
        state, now = self.conn.their_state, self.loop.time()
        if state is h11.IDLE:
            self._body_from = None
            pending = bool(self.conn.trailing_data[0])
            if self._head_by is None and (self._first or pending):
                self._head_by = now + self.head_timeout_s
                self._arm(self._head_by)
            return
        self._first, self._head_by = False, None
        if state is h11.SEND_BODY:
            if self._body_from is None:
                self._body_from, self._body_bytes = now, 0
            self._arm(self._body_from + self.body_timeout_s + self._body_bytes / self.body_min_rate)
            return
        self._body_from = None
        self._cancel()

    def _arm(self, deadline: float) -> None:
        self._cancel()
        self._timer = self.loop.call_at(deadline, self._timed_out)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.SEND_BODY and self.flow.read_paused:
            # The server stopped reading, not the client: wait for the app to catch up.
            self._body_from = self.loop.time()
            self._body_bytes = 0
            self._watch()
            return
        part = "body" if self.conn.their_state is h11.SEND_BODY else "head"
        logger.info("closed a connection whose request %s stalled", part)
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()  # the answer is cut off: nothing more to say
            return
        self.transport.write(_request_timeout(part))
        self._lingering = True
        if self.cycle is not None:  # the app waiting for the body hears of the end now
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.write_eof()  # the 408, then end of stream; the client's close ends it
        self.loop.call_later(LINGER_S, self.transport.close)


def _request_timeout(part: str) -> bytes:
    """A whole 408 response in the API's error shape, written as raw bytes: h11 cannot send a
    response to a request whose head it never saw."""
    message = (
        f"the request's {part} came too slowly and the server stopped waiting: send the whole "
        "request at once"
    )
    body = json.dumps({"error": {"status": 408, "message": message}}).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body
