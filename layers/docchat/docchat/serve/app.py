"""The chat API (FastAPI): the same app under uvicorn locally and behind the Lambda Web Adapter.

POST /chat                 Server-Sent Events: status, tool_call, sources, delta, citations,
                           then done or error
POST /v1/chat/completions  OpenAI-compatible, streamed or not; citations in an extra field
GET  /v1/models             the OpenAI model list (one model, "docchat")
GET  /documents, /documents/{id}
GET  /documents/{id}/file  the document's PDF for the page's viewer: locally the bytes
                           (application/pdf); in the cloud JSON {url, expires_in}, a presigned
                           S3 GET of a few minutes (API Gateway cannot carry large PDFs)
GET  /documents/{id}/pages/{n}   a page's text as conversion extracted it: {page, text, ocr}
GET  /ready                the Web Adapter's readiness check (touches no backend)
GET  /health               each dependency's state (registry, index, model); 503 if one fails
GET  /                     the chat page (docchat/web), its files under /static/
GET  /config               what the page needs to know: upload kind, size limit, answer mode
GET  /auth-config          how the page signs in (open in the cloud stack, like / and /static/)
POST /documents            a PDF as the raw body (?filename=...), indexed in the background
POST /documents/upload-url a presigned S3 PUT URL, where uploads go through the bucket
DELETE /documents/{id}     forget a document (in the cloud: delete its object)
GET  /conversations        the caller's saved conversations (id, title, updated), newest first
GET|PATCH|DELETE /conversations/{id}   one conversation: its messages with their citations,
                           a new title, or gone; another user's conversation is not found (404)

A streamed answer whose client goes away (the page's Stop, a closed tab) is closed on the server:
the agent's generator and with it the model's stream, so a stopped answer stops generating.
Bodies are counted as they arrive (FastAPI's max_body_size), so a chunked body is refused at
its limit too. The local server (docchat.wiring.local) adds `guards.LocalGuard`:
loopback Host names only, no writes from other sites, a bearer token when one is configured.
Documents are shown by name (`source_name`): server paths stay on the server.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException

from docchat.adapters.local_files import LocalFiles
from docchat.answer.backend import ChatBackend
from docchat.answer.conversations import StoredMessage, extended, remembered, title_from
from docchat.answer.events import sse
from docchat.config import Settings
from docchat.errors import (
    ConversationFullError,
    ConversationNotFoundError,
    DocchatError,
    DocumentFileError,
    DocumentNotFoundError,
    NotPdfError,
    PageTextMissingError,
    StorageError,
    UploadError,
    UploadRouteError,
    UploadTooLargeError,
)
from docchat.ingest.uploads import MAX_UPLOAD_BYTES, S3_UPLOAD_ROUTE
from docchat.limits import (
    CONVERSATION_ID_PATTERN,
    MAX_DOC_IDS,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES,
    MAX_TITLE_CHARS,
    MAX_TOTAL_CHARS,
)
from docchat.llm import Message
from docchat.models import DocumentRecord, FileLink, file_name, source_name
from docchat.ports import ConversationStore, DocumentFiles, Uploads
from docchat.serve.guards import error_response
from docchat.serve.identity import UserOf, local_user
from docchat.serve.observe import RequestIds, logged_answer
from docchat.serve.openai_api import CompletionRequest, ModelList, completion, completion_chunks

MAX_BODY_BYTES = 512 * 1024
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
WEB = Path(__file__).parents[1] / "web"  # docchat/web: the page and its static files
# application/octet-stream is what generic clients send for a file; like application/pdf, and
# unlike the types a page may send to another site without asking first (text/plain, forms,
# none at all), it cannot come from another site's page.
PDF_TYPES = {"application/pdf", "application/x-pdf", "application/octet-stream"}
UploadsFactory = Callable[[ChatBackend], Uploads]
FilesFactory = Callable[[ChatBackend], DocumentFiles]
# An absolute path in a storage error's message: only its last part is sent to the client.
_STORAGE_PATH = re.compile(r"(?<![\w.])/(?:[^\s/'\"():,;]+/)*([^\s/'\"():,;]*)")
logger = logging.getLogger(__name__)


class SignIn(BaseModel):
    """How the page signs in, from the settings: nothing (local, NONE), impossible (IAM: a
    browser cannot sign SigV4 requests) or Cognito managed login with this public client."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["none", "iam", "cognito"] = "none"
    region: str = ""
    domain: str = ""
    client_id: str = ""
    scopes: str = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> SignIn:
        if settings.api_auth == "COGNITO":
            return cls(
                mode="cognito",
                region=settings.region,
                domain=settings.auth_domain.rstrip("/"),
                client_id=settings.auth_client_id,
                scopes="openid email",
            )
        return cls(mode="iam" if settings.api_auth == "IAM" else "none", region=settings.region)


class ChatMessage(BaseModel):
    role: Literal["user", "assistant"]
    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, content: str) -> str:
        if not content.strip():
            raise ValueError("the message is only white space: write something")
        return content


class ChatRequest(BaseModel):
    """The conversation as the model should see it, an optional document filter, and an
    optional saved conversation the question and its answer are added to: after its first
    `after` saved messages when given (what the page shows before the question; a saved answer
    beyond them, asked again or stopped, is replaced), else at its end."""

    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    doc_ids: list[str] | None = Field(None, max_length=MAX_DOC_IDS)
    conversation_id: str | None = Field(None, pattern=CONVERSATION_ID_PATTERN)
    after: int | None = Field(None, ge=0)

    @field_validator("messages")
    @classmethod
    def _ends_with_user(cls, messages: list[ChatMessage]) -> list[ChatMessage]:
        if messages[-1].role != "user":
            raise ValueError("the last message must be the user's question")
        if sum(len(m.content) for m in messages) > MAX_TOTAL_CHARS:
            raise ValueError(f"the conversation is longer than {MAX_TOTAL_CHARS} characters")
        return messages


class RenameRequest(BaseModel):
    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS)

    @field_validator("title")
    @classmethod
    def _not_blank(cls, title: str) -> str:
        if not title.strip():
            raise ValueError("the title is only white space: write something")
        return " ".join(title.split())


ConversationId = PathParam(pattern=CONVERSATION_ID_PATTERN)
CONVERSATION_STATUS: tuple[tuple[type[DocchatError], int], ...] = (
    (ConversationNotFoundError, 404),
    (ConversationFullError, 409),
)


class UploadUrlRequest(BaseModel):
    filename: str = Field(min_length=1, max_length=255)
    size: int = Field(gt=0, description="the file's exact size in bytes; S3 holds the PUT to it")


def create_app(
    backend: Callable[[], ChatBackend],
    *,
    uploads: UploadsFactory | None = None,
    files: FilesFactory = lambda _: LocalFiles(),
    sign_in: Callable[[], SignIn] = SignIn,
    conversations: Callable[[], ConversationStore] | None = None,
    user_of: UserOf = local_user,
) -> FastAPI:
    """The app; `backend` (and `uploads` and `files`, given the backend; `conversations`) is
    called on first use so that start-up stays light. Without `uploads` the documents are
    read-only; `files` says where the viewer reads a PDF (by default the record's own local
    file); without `sign_in` the page does not sign in; without `conversations` none are saved.
    `user_of` names the caller whose conversations a request reads and changes."""
    app = FastAPI(title="docchat", version="0.1.0", max_body_size=MAX_BODY_BYTES)
    # A request id in the X-Request-Id header and in every log line of the request.
    app.add_middleware(RequestIds)
    cache: dict[str, ChatBackend] = {}
    stores: dict[str, Uploads] = {}
    viewers: dict[str, DocumentFiles] = {}
    stores_lock = threading.Lock()

    def get_backend() -> ChatBackend:
        if "backend" not in cache:
            cache["backend"] = backend()
        return cache["backend"]

    def get_uploads() -> Uploads:
        if uploads is None:
            raise HTTPException(
                501, "this server does not take uploads: add documents with `docchat ingest`"
            )
        with stores_lock:
            if "uploads" not in stores:
                stores["uploads"] = uploads(get_backend())
            return stores["uploads"]

    def get_files() -> DocumentFiles:
        with stores_lock:
            if "files" not in viewers:
                viewers["files"] = files(get_backend())
            return viewers["files"]

    saved: dict[str, ConversationStore] = {}

    def get_conversations() -> ConversationStore:
        if conversations is None:
            raise HTTPException(501, "this server keeps no conversations: send `messages` only")
        with stores_lock:
            if "conversations" not in saved:
                saved["conversations"] = conversations()
            return saved["conversations"]

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(400, "the body is not valid JSON")
        details = [
            {"field": ".".join(str(p) for p in e.get("loc", ())[1:]), "problem": e.get("msg")}
            for e in errors
        ]
        message = "; ".join(f"{d['field'] or 'body'}: {d['problem']}" for d in details)
        return error_response(422, f"invalid request: {message}", details=details)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 413 and exc.detail == "Content Too Large":  # max_body_size's
            return error_response(413, _too_large(request))
        return error_response(exc.status_code, str(exc.detail))

    @app.exception_handler(DocumentFileError)
    async def file_error(_: Request, exc: DocumentFileError) -> JSONResponse:
        logger.info("document file unavailable: %s", exc.code)
        return error_response(exc.http_status, _STORAGE_PATH.sub(r"\1", str(exc)), code=exc.code)

    @app.exception_handler(ConversationNotFoundError)
    @app.exception_handler(ConversationFullError)
    async def conversation_error(_: Request, exc: DocchatError) -> JSONResponse:
        status = next(code for kind, code in CONVERSATION_STATUS if isinstance(exc, kind))
        return error_response(status, str(exc), code=exc.code)

    @app.exception_handler(StorageError)
    async def storage_error(_: Request, exc: StorageError) -> JSONResponse:
        """A damaged, full or read-only data directory: the JSON error shape, no traceback;
        the server's own paths stay in its log."""
        logger.warning("storage error: %s", exc)
        return error_response(exc.http_status, _STORAGE_PATH.sub(r"\1", str(exc)), code=exc.code)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(WEB / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=WEB, check_dir=False), name="static")

    @app.get("/config")
    def config() -> dict[str, Any]:
        return {
            "upload": uploads_kind(),
            "max_upload_bytes": MAX_UPLOAD_BYTES,
            "answers": get_backend().mode,
        }

    @app.get("/auth-config")
    def auth_config() -> dict[str, Any]:
        return sign_in().model_dump()

    def uploads_kind() -> str:
        try:
            return get_uploads().kind
        except HTTPException:
            return "none"

    @app.get("/ready")
    def ready() -> dict[str, str]:
        """The Web Adapter's readiness check: the server answers. It touches no backend, so a
        failing dependency cannot keep the function from ever becoming ready."""
        return {"status": "ready"}

    @app.get("/health")
    def health() -> JSONResponse:
        checks, problems = _dependency_checks(get_backend)
        if problems:
            return error_response(503, f"a dependency failed: {'; '.join(problems)}", checks=checks)
        return JSONResponse({"status": "ok", "checks": checks})

    @app.get("/documents")
    def documents() -> dict[str, Any]:
        return {"documents": [_shown(d) for d in get_backend().library.documents()]}

    @app.get("/documents/{doc_id}")
    def document(doc_id: str) -> dict[str, Any]:
        record = get_backend().library.document(doc_id)
        if record is None:
            raise HTTPException(404, f"no document with id {doc_id!r}: GET /documents lists them")
        return _shown(record)

    @app.get("/documents/{doc_id}/file", response_model=None)
    def document_file(doc_id: str) -> FileResponse | JSONResponse:
        """A registered document's PDF: its bytes, or (cloud) a short-lived URL to them."""
        record = get_backend().library.document(doc_id)
        if record is None:
            raise HTTPException(404, f"no document with id {doc_id!r}: GET /documents lists them")
        found = get_files().pdf(record)
        if isinstance(found, FileLink):
            return JSONResponse(found.model_dump(), headers={"Cache-Control": "no-store"})
        return FileResponse(
            found,
            media_type="application/pdf",
            content_disposition_type="inline",
            filename=source_name(record.source),
            headers={"Cache-Control": "private, no-cache", "X-Content-Type-Options": "nosniff"},
        )

    @app.get("/documents/{doc_id}/pages/{number}", response_model=None)
    def page_text(doc_id: str, number: int) -> dict[str, Any] | JSONResponse:
        """What conversion extracted from one page: its text and whether OCR read it."""
        try:
            [page] = get_backend().library.extracted_pages(doc_id, first=number, last=number)
        except (DocumentNotFoundError, PageTextMissingError) as exc:
            return error_response(404, str(exc), code=exc.code)
        return {"page": page.number, "text": page.markdown, "ocr": page.ocr}

    @app.post("/documents", status_code=202, max_body_size=MAX_UPLOAD_BYTES)
    async def upload(
        request: Request, filename: str = Query(min_length=1, max_length=255)
    ) -> dict[str, Any]:
        store = await run_in_threadpool(get_uploads)
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        with _upload_errors():
            if store.kind != "direct":
                raise UploadRouteError(S3_UPLOAD_ROUTE)
            if kind.lower() not in PDF_TYPES:
                raise NotPdfError(
                    f"the body is {kind or 'of no declared type'}, not a PDF: send the file "
                    "with Content-Type: application/pdf"
                )
            data = await request.body()  # max_body_size stops it at MAX_UPLOAD_BYTES
            record = await run_in_threadpool(store.receive, filename, data)
        return _shown(record)

    @app.post("/documents/upload-url")
    def upload_url(request: UploadUrlRequest) -> dict[str, Any]:
        with _upload_errors():
            ticket = get_uploads().upload_url(request.filename, size=request.size)
        return ticket.model_dump()

    @app.delete("/documents/{doc_id}")
    def delete(doc_id: str) -> JSONResponse:
        with _upload_errors():
            removal = get_uploads().remove(doc_id)
        return JSONResponse(removal.model_dump(), 200 if removal.status == "deleted" else 202)

    @app.get("/conversations")
    def conversation_list(http: Request) -> dict[str, Any]:
        user = user_of(http)
        listed = get_conversations().conversations(user)
        return {"conversations": [c.model_dump(mode="json") for c in listed]}

    @app.get("/conversations/{conversation_id}")
    def conversation(http: Request, conversation_id: str = ConversationId) -> dict[str, Any]:
        user = user_of(http)
        found = get_conversations().conversation(user, conversation_id)
        if found is None:
            raise _not_found(conversation_id)
        return found.model_dump(mode="json")

    @app.patch("/conversations/{conversation_id}")
    def rename(
        http: Request, body: RenameRequest, conversation_id: str = ConversationId
    ) -> dict[str, Any]:
        user = user_of(http)
        renamed = get_conversations().rename(user, conversation_id, title=body.title)
        if renamed is None:
            raise _not_found(conversation_id)
        return renamed.model_dump(mode="json")

    @app.delete("/conversations/{conversation_id}")
    def forget(http: Request, conversation_id: str = ConversationId) -> dict[str, Any]:
        user = user_of(http)
        if not get_conversations().delete(user, conversation_id):
            raise _not_found(conversation_id)
        return {"id": conversation_id, "status": "deleted"}

    @app.post("/chat")
    def chat(request: ChatRequest, http: Request) -> StreamingResponse:
        saving = None
        if request.conversation_id is not None:
            saving = (user_of(http), get_conversations(), request.conversation_id)
        live = get_backend()
        _check_doc_ids(live, request.doc_ids)
        messages: list[Message] = [{"role": m.role, "content": m.content} for m in request.messages]
        question = request.messages[-1].content
        if saving is not None:
            user, store, conversation_id = saving
            started = store.start(user, conversation_id, title=title_from(question))
            # Refused now (409) rather than after the answer when even the question is too much.
            extended(
                started.messages,
                [StoredMessage(role="user", content=question)],
                after=request.after,
            )

            def save(exchange: list[StoredMessage]) -> None:
                if store.append(user, conversation_id, exchange, after=request.after) is None:
                    logger.info("conversation %s was deleted during the answer", conversation_id)

        answer = live.agent().run(messages, doc_ids=request.doc_ids)
        events = logged_answer(answer, route="/chat")
        if saving is not None:
            events = remembered(events, question, save)
        return StreamingResponse(
            _while_connected(http, (sse(e) for e in events), events, answer),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return ModelList().model_dump(mode="json")

    @app.post("/v1/chat/completions", response_model=None)
    def completions(
        request: CompletionRequest, http: Request
    ) -> StreamingResponse | dict[str, Any]:
        live = get_backend()
        _check_doc_ids(live, request.doc_ids)
        messages = request.conversation()
        answer = live.agent().run(messages, doc_ids=request.doc_ids)
        events = logged_answer(answer, route="/v1/chat/completions")
        if request.stream:
            chunks = completion_chunks(events, request.model)
            return StreamingResponse(
                _while_connected(http, chunks, events, answer),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        return completion(events, request.model).model_dump(mode="json")

    return app


_END = object()


async def _while_connected(
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


def _not_found(conversation_id: str) -> ConversationNotFoundError:
    return ConversationNotFoundError(
        f"no conversation with id {conversation_id!r}: GET /conversations lists yours"
    )


def _too_large(request: Request) -> str:
    """What to say when a body passed its route's limit (an upload's, or every other's)."""
    if request.method == "POST" and request.url.path.rstrip("/").endswith("/documents"):
        return (
            f"the file is larger than the {MAX_UPLOAD_BYTES // (1024 * 1024)} MB an upload "
            "may have: split the document"
        )
    return f"the request body is larger than {MAX_BODY_BYTES} bytes"


def _shown(record: DocumentRecord) -> dict[str, Any]:
    """A document as the API shows it: named, never by its path on the server."""
    return {
        **record.model_dump(mode="json"),
        "source": source_name(record.source),
        "file_name": file_name(record.source),
    }


UPLOAD_STATUS: tuple[tuple[type[DocchatError], int], ...] = (
    (NotPdfError, 415),
    (UploadTooLargeError, 413),
    (UploadRouteError, 409),
    (DocumentNotFoundError, 404),
    (UploadError, 400),
)


@contextmanager
def _upload_errors() -> Iterator[None]:
    """The upload side's refusals as HTTP errors with the same message."""
    try:
        yield
    except (UploadError, DocumentNotFoundError) as exc:
        status = next(code for kind, code in UPLOAD_STATUS if isinstance(exc, kind))
        raise HTTPException(status, str(exc)) from exc


def _check_doc_ids(backend: ChatBackend, doc_ids: list[str] | None) -> None:
    if doc_ids is None:
        return
    unknown = [d for d in doc_ids if backend.library.document(d) is None]
    if unknown:
        raise HTTPException(
            404, f"unknown document ids: {', '.join(unknown)}; GET /documents lists them"
        )


def _dependency_checks(
    get_backend: Callable[[], ChatBackend],
) -> tuple[dict[str, Any], list[str]]:
    """Each dependency's state for /health, and what failed. Any exception is a finding here,
    not an error: reporting it is the route's job."""
    checks: dict[str, Any] = {}
    problems: list[str] = []

    def probe(name: str, call: Callable[[], dict[str, Any]]) -> None:
        try:
            checks[name] = {"status": "ok", **call()}
        except Exception as exc:
            said = _STORAGE_PATH.sub(r"\1", str(exc))  # the server's paths stay in its log
            code = getattr(exc, "code", "")
            checks[name] = {
                "status": "failed",
                "problem": f"{type(exc).__name__}: {said}",
                **({"code": code} if code else {}),
            }
            problems.append(f"{name}: {said}")

    probe("backend", lambda: {"mode": get_backend().mode})
    if problems:
        return checks, problems
    live = get_backend()
    probe("registry", lambda: {"documents": len(live.library.documents())})
    count = getattr(live.library.index, "count", None)
    probe("index", lambda: {"chunks": count() if callable(count) else None})
    checks["model"] = {"status": "ok" if live.model else "none", "mode": live.mode}
    library = live.library
    checks["reranker"] = (
        {"status": "off", "note": library.rerank_off}
        if library.rerank_off
        else {"status": "ok" if library.reranker else "none"}
    )
    return checks, problems
