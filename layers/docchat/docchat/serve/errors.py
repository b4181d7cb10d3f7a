"""Every error the API answers, in one place: the HTTP status of each DocchatError (STATUS), the
JSON error shape, and the handlers that give the routes' errors, invalid requests and the
server's own refusals (unknown route, method not allowed, body too large, unexpected failure)
that shape.

Shape: {"error": {"status", "message", "code" (a DocchatError's), "request_id", ...}}, the
request id being the X-Request-Id header's. Under /v1/ (the OpenAI-compatible API) the shape is
OpenAI's, {"error": {"message", "type", "param", "code"}}, which OpenAI's SDKs parse into their
exceptions (https://platform.openai.com/docs/guides/error-codes); invalid values there are 400,
as OpenAI answers them, not 422.
"""

from __future__ import annotations

import logging
import re
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docchat.errors import (
    AccessDeniedError,
    CallerUnknownError,
    CloudAccessDeniedError,
    CloudServiceError,
    CloudThrottledError,
    CollectionNameError,
    ConfigError,
    ConversationFullError,
    ConversationNotFoundError,
    ConversionError,
    DocchatError,
    DocumentFileChangedError,
    DocumentFileError,
    DocumentNotFoundError,
    EmbedderMismatchError,
    EmbeddingError,
    EmbeddingThrottledError,
    EvaluationDataError,
    IndexCorruptError,
    IndexMissingError,
    IndexSchemaError,
    ModelError,
    ModelFileError,
    ModelUnavailableError,
    NotOfferedError,
    ObjectAccessDeniedError,
    ObjectMissingError,
    PageTextMissingError,
    PdfTooLargeError,
    ReadOnlyStorageError,
    RerankError,
    SearchIndexError,
    SearchIndexUnavailableError,
    SecretError,
    SourceError,
    StaleWriteError,
    StorageError,
    StorageFullError,
    SupersededError,
    UnsupportedUploadError,
    UploadError,
    UploadRouteError,
    UploadTooLargeError,
)
from docchat.serve.observe import current_request_id
from docchat.serve.schema import inline_schema

#: The HTTP status of each DocchatError; a subclass not listed has its nearest listed base's.
#: tests/api/test_errors.py fails when a class directly under DocchatError is missing.
STATUS: dict[type[DocchatError], int] = {
    DocchatError: 500,
    ConversionError: 422,
    PdfTooLargeError: 413,
    EmbedderMismatchError: 500,
    ModelFileError: 500,
    DocumentNotFoundError: 404,
    PageTextMissingError: 404,
    ConfigError: 500,
    EmbeddingError: 502,
    EmbeddingThrottledError: 503,
    SearchIndexError: 502,
    SearchIndexUnavailableError: 503,
    ObjectMissingError: 404,
    ObjectAccessDeniedError: 502,
    StaleWriteError: 409,
    IndexSchemaError: 500,
    StorageError: 503,
    IndexMissingError: 404,
    IndexCorruptError: 500,
    StorageFullError: 507,
    ReadOnlyStorageError: 409,
    ModelError: 502,
    ModelUnavailableError: 503,
    RerankError: 502,
    UploadError: 400,
    UnsupportedUploadError: 415,
    UploadTooLargeError: 413,
    UploadRouteError: 409,
    DocumentFileError: 404,
    DocumentFileChangedError: 409,
    SupersededError: 409,
    EvaluationDataError: 400,
    ConversationNotFoundError: 404,
    ConversationFullError: 409,
    NotOfferedError: 501,
    CallerUnknownError: 401,
    CollectionNameError: 400,
    SourceError: 400,  # local mode's sources; no route raises it
    SecretError: 502,  # a stack's source's secret (the sync function); no route raises it
    AccessDeniedError: 403,
    CloudServiceError: 502,
    CloudThrottledError: 503,
}
# Errors about the server's own files: only the last part of a path in their message is sent.
_PATHS_HIDDEN = (StorageError, DocumentFileError, IndexSchemaError)
_PATH = re.compile(r"(?<![\w.])/(?:[^\s/'\"():,;]+/)*([^\s/'\"():,;]*)")
OPENAI_PREFIX = "/v1/"
logger = logging.getLogger(__name__)


def status_of(kind: type[DocchatError]) -> int:
    """The HTTP status the API answers an error of this class with."""
    for base in kind.__mro__:
        if issubclass(base, DocchatError) and base in STATUS:
            return STATUS[base]
    raise AssertionError("DocchatError is in STATUS")


def hide_paths(text: str) -> str:
    """`text` with each absolute path cut to its last part: the server's paths stay in its log."""
    return _PATH.sub(r"\1", text)


def error_response(
    status: int,
    message: str,
    *,
    code: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: object,
) -> JSONResponse:
    """The API's one error shape, with the id of the request being served."""
    error: dict[str, object] = {"status": status, "message": message}
    if code:
        error["code"] = code
    request_id = current_request_id()
    if request_id:
        error["request_id"] = request_id
    return JSONResponse({"error": {**error, **extra}}, status, headers=headers)


def openai_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """OpenAI's error shape (the request id is in the X-Request-Id header, as OpenAI sends it)."""
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"message": message, "type": kind, "param": param, "code": code}
    return JSONResponse({"error": body}, status, headers=headers)


_OPENAI_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def refusal(
    request: Request | Scope,
    status: int,
    message: str,
    *,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An error in the shape of the API the request went to (OpenAI's under /v1/)."""
    scope = request.scope if isinstance(request, Request) else request
    if str(scope.get("path", "")).startswith(OPENAI_PREFIX):
        return openai_error(status, message, code=code, headers=headers)
    return error_response(status, message, code=code, headers=headers)


def docchat_refusal(request: Request | Scope, exc: DocchatError) -> JSONResponse:
    """The answer to a DocchatError: its status from STATUS, in the shape of the API the request
    went to, with server paths cut from the messages that may hold them."""
    status = status_of(type(exc))
    message = hide_paths(str(exc)) if isinstance(exc, _PATHS_HIDDEN) else str(exc)
    if status >= 500:
        logger.warning("%s: %s", exc.code, exc)
    return refusal(request, status, message, code=exc.code)


async def _docchat_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DocchatError)
    return docchat_refusal(request, exc)


# AWS error codes (botocore's ClientError `Error.Code`) of a refused call and of throttling.
_AWS_DENIED = frozenset({"AccessDeniedException", "AccessDenied", "UnauthorizedOperation"})
_AWS_THROTTLED = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "SlowDown",
    }
)


def cloud_error(exc: Exception) -> CloudServiceError:
    """The typed error of an AWS call no adapter turned into one (botocore's ClientError):
    what was refused, and what an operator does about it."""
    response = getattr(exc, "response", None) or {}
    error = response.get("Error", {}) if isinstance(response, dict) else {}
    code = str(error.get("Code", "Unknown"))
    said = str(error.get("Message", "")).strip()
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    operation = str(getattr(exc, "operation_name", "") or "an AWS operation")
    aws = f"AWS said: {code}{': ' + said if said else ''}"
    if code in _AWS_DENIED or status == 403:
        return CloudAccessDeniedError(
            f"AWS refused {operation}: this function's IAM role does not allow it. Add the "
            f"operation's action on its resource to the function's role (template.yaml) and "
            f"deploy again. {aws}"
        )
    if code in _AWS_THROTTLED:
        return CloudThrottledError(f"AWS is throttling {operation}: try again shortly. {aws}")
    return CloudServiceError(
        f"AWS failed {operation}: check the service's status and this function's log "
        f"under the request id. {aws}"
    )


async def _aws_error(request: Request, exc: Exception) -> JSONResponse:
    return await _docchat_error(request, cloud_error(exc))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """The framework's own refusals: unknown route, method not allowed, body too large."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    message = str(exc.detail)
    if exc.status_code == 400 and message == "There was an error parsing the body":
        message = "the body is not valid JSON (or not UTF-8)"
    if exc.status_code == 404 and message == "Not Found":
        message = f"there is no {request.url.path} here: /docs lists the API"
    if exc.status_code == 405:
        allowed = allowed_methods(request)
        headers["Allow"] = ", ".join(allowed)
        message = f"{request.method} is not allowed on {request.url.path}: use {', '.join(allowed)}"
    return refusal(request, exc.status_code, message, headers=headers)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    """A body or parameter that does not fit the route: 400 for JSON that does not parse, 422
    for values (400 under /v1/, as OpenAI answers them)."""
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    openai = request.url.path.startswith(OPENAI_PREFIX)
    if any(e.get("type") == "json_invalid" for e in errors):
        if openai:
            return openai_error(400, "We could not parse the JSON body of your request.")
        return error_response(400, "the body is not valid JSON")
    details = [
        {"field": _field(e.get("loc", ()), openai=openai), "problem": str(e.get("msg"))}
        for e in errors
    ]
    message = "; ".join(f"{d['field'] or 'body'}: {d['problem']}" for d in details)
    if openai:  # the first problem, as OpenAI words one ("Invalid 'temperature': ...")
        first = errors[0]
        field = _field(first.get("loc", ()), openai=True)
        kind = str(first.get("type"))
        said = str(first.get("msg")).removeprefix("Value error, ")
        if field and kind != "unsupported_value":
            said = f"Invalid '{field}': {said}"
        code = _OPENAI_CODES.get(kind, "invalid_value")
        return openai_error(400, said, param=field or None, code=code)
    return error_response(422, f"invalid request: {message}", details=details)


# pydantic's error types as OpenAI's codes for the same refusal.
_OPENAI_CODES = {
    "greater_than_equal": "below_min_value",
    "greater_than": "below_min_value",
    "less_than_equal": "above_max_value",
    "less_than": "above_max_value",
    "too_long": "above_max_length",
    "too_short": "below_min_length",
    "literal_error": "unsupported_value",
    "unsupported_value": "unsupported_value",
    "missing": "missing_required_parameter",
}


def _field(loc: object, *, openai: bool = False) -> str:
    """The field a validation error is about: `messages.2.content`, or as OpenAI names it,
    `messages[2].content`."""
    parts = list(loc)[1:] if isinstance(loc, (list, tuple)) else []
    if not openai:
        return ".".join(str(p) for p in parts)
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name


async def _client_gone(_: Request, __: Exception) -> JSONResponse:
    """The client closed the connection before its body was complete: nobody reads this."""
    logger.info("the client went away before its request body was complete")
    return error_response(400, "the request body ended early")


def allowed_methods(request: Request) -> list[str]:
    """The methods some route takes at this request's path (HEAD wherever GET is), found by
    asking the app's routes with each method in turn."""
    allowed: set[str] = set()
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        # From the app's root: a mounted app (the static files) sees its own root_path.
        root = request.scope.get("app_root_path", request.scope.get("root_path", ""))
        probe = {**request.scope, "method": method, "root_path": root}
        for route in request.app.router.routes:
            # A mount (the static files) matches any method but serves only GET.
            takes = method == "GET" or not isinstance(route, Mount)
            if takes and route.matches(probe)[0] is Match.FULL:
                allowed.add(method)
    if "GET" in allowed:
        allowed.add("HEAD")
    return sorted(allowed)


def install_error_handlers(app: FastAPI) -> None:
    """Give every error raised while a route runs the API's error shape."""
    app.add_exception_handler(DocchatError, _docchat_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    try:  # local installs may have no AWS SDK; nothing raises its errors there
        from botocore.exceptions import ClientError
    except ImportError:  # pragma: no cover
        return
    app.add_exception_handler(ClientError, _aws_error)


class Unexpected:
    """ASGI middleware: an unexpected exception answers 500 in the error shape, with the
    request id (the traceback goes to the log, not to the client)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception:
            if started:  # too late for a status: the connection is cut instead
                raise
            logger.exception("unexpected error")
            response = refusal(
                scope,
                500,
                "the server failed unexpectedly; it is logged under this request's id",
                code="internal",
            )
            await response(scope, receive, send)


class ErrorDetail(BaseModel):
    """What went wrong; `code` names a DocchatError, `details` each invalid field."""

    model_config = ConfigDict(extra="allow")

    status: int
    message: str
    code: str | None = None
    request_id: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class OpenAIErrorBody(BaseModel):
    error: OpenAIErrorDetail


# Every route may answer these: a token or a sign-in missing (401), a foreign Host or another
# site's write refused by `docchat serve` (403), an unexpected failure (500).
COMMON = (401, 403, 500)


def documented(
    *statuses: int, body: bool = False, openai: bool = False
) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` of a route that answers these statuses (and COMMON; with a
    `body`, also those of a body that does not parse, is too large or does not fit) with the
    error shape, as JSON whatever the route's own media type."""
    schema = inline_schema(OpenAIErrorBody if openai else ErrorBody)
    answered = {*statuses, *COMMON, *((400, 413, 422) if body else ())}
    return {
        status: {
            "description": HTTPStatus(status).phrase,
            "content": {"application/json": {"schema": schema}},
        }
        for status in sorted(answered)
    }
