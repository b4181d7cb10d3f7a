"""The chat API's logs: JSON lines (Powertools Logger), each carrying its request's id.

Every request gets an id: API Gateway's `requestId` when the request came through the Lambda
Web Adapter, which forwards API Gateway's request context as JSON in the
`x-amzn-request-context` header
(https://awslabs.github.io/aws-lambda-web-adapter/features/request-context.html), else a new
one. The response returns it in `X-Request-Id`, and every log line written while the request
is served has it as `correlation_id`, docchat's module loggers (`docchat.answer.agent`, ...)
included: the id is a context variable, so threads started with the request's context (the
thread pool FastAPI runs routes and streams in, the agent's first index call) carry it too.

Per request one `request` line (method, path, status, duration_ms), per chat answer one
`chat answer` line (mode, outcome, error_code, tokens, timings). Never the question, the
answer or document text.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator
from functools import cache
from typing import Any, TextIO

from aws_lambda_powertools.logging import Logger
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docchat.answer.events import ChatEvent, DoneEvent, ErrorEvent, StatusEvent
from docchat.serve.identity import request_context

REQUEST_ID_HEADER = "X-Request-Id"
CORRELATION_KEY = "correlation_id"
PACKAGE = "docchat"
SERVICE_VARIABLE = "POWERTOOLS_SERVICE_NAME"
QUIET_PATHS = frozenset({"/ready"})  # the Web Adapter polls it every 10 ms while starting
# API Gateway's request ids are UUIDs; anything else from a header is not written to a log.
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class _Stdout(logging.StreamHandler[TextIO]):
    """A handler writing to `sys.stdout` as it is at each record (a server or a test may
    replace it after the handler was made)."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stdout  # under the handler's lock, which `handle` holds
        super().emit(record)


@cache
def api_logger() -> Logger:
    """The chat API's Logger: JSON lines on stdout, at POWERTOOLS_LOG_LEVEL (INFO by default),
    its service POWERTOOLS_SERVICE_NAME (the stack sets it; `docchat serve`: "docchat").

    Its handler also writes the records of docchat's own module loggers."""
    logger = Logger(service=os.environ.get(SERVICE_VARIABLE) or PACKAGE, logger_handler=_Stdout())
    package = logging.getLogger(PACKAGE)
    if logger.name != PACKAGE:  # else they reach it anyway, as its children
        package.addHandler(logger.logger_handler)
        package.setLevel(logger.log_level)
    return logger


def request_id(request: Request) -> str:
    """API Gateway's request id from the Web Adapter's context header, else a new one."""
    context = request_context(request)
    given = context.get("requestId") if context is not None else None
    if isinstance(given, str) and _SAFE_ID.fullmatch(given):
        return given
    return str(uuid.uuid4())


def current_request_id() -> str | None:
    """The id of the request being served in this context, if any."""
    value = api_logger().thread_safe_get_current_keys().get(CORRELATION_KEY)
    return value if isinstance(value, str) else None


class RequestIds:
    """ASGI middleware: a request id per HTTP request, in the logs and the response headers,
    and one `request` log line, written before the response's last byte is sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.logger = api_logger()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(Request(scope))
        started = time.monotonic()
        status: int | None = None
        logged = False

        def log_request() -> None:
            nonlocal logged
            logged = True
            if scope["path"] in QUIET_PATHS:
                return
            self.logger.info(
                "request",
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status or 500,  # none sent: the app raised
                    "duration_ms": _ms(time.monotonic() - started),
                },
            )

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                header = (REQUEST_ID_HEADER.lower().encode(), rid.encode())
                message = {**message, "headers": [*message.get("headers", []), header]}
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                log_request()
            await send(message)

        self.logger.thread_safe_append_keys(**{CORRELATION_KEY: rid})
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if not logged:
                log_request()
            self.logger.thread_safe_remove_keys([CORRELATION_KEY])


def logged_answer(events: Iterator[ChatEvent], *, route: str) -> Iterator[ChatEvent]:
    """`events` unchanged, and one `chat answer` log line once they end (or the client left)."""
    rid = current_request_id()
    started = time.monotonic()
    line: dict[str, Any] = {"route": route, "mode": None, "outcome": "stopped"}
    try:
        for event in events:
            _note(line, event)
            yield event
    finally:
        line.setdefault("total_ms", _ms(time.monotonic() - started))
        if rid is not None:  # a client gone mid-answer may close this stream elsewhere
            line[CORRELATION_KEY] = rid
        api_logger().info("chat answer", extra=dict(line))


def _note(line: dict[str, Any], event: ChatEvent) -> None:
    """What the log line keeps of one event: no text, only its mode, outcome and numbers."""
    match event:
        case StatusEvent(mode=mode) if mode is not None:
            line["mode"] = mode
        case ErrorEvent(code=code):
            line.update(outcome="error", error_code=code)
        case DoneEvent(mode=mode, usage=usage, timings=timings):
            line.update(
                outcome="done",
                mode=mode,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                rerank_search_units=usage.rerank_search_units,
                cost_usd=usage.cost_usd,
                total_ms=timings.total_ms,
                retrieval_ms=timings.retrieval_ms,
                first_token_ms=timings.first_token_ms,
            )
        case _:
            pass


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)
