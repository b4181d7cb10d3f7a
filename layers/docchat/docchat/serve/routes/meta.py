"""The page and what it reads first, and the server's own state.

GET /             the chat page (docchat/web), with its Content-Security-Policy
GET /config       what the page needs to know: upload kind, size limits, answer mode, chat limits
GET /auth-config  how the page signs in (open in the cloud stack, like / and /static/)
GET /ready        the Web Adapter's readiness check (touches no backend)
GET /health       each dependency's state (registry, index, model); 503 if one fails. Its
                  counts are of the documents the caller may read (an admin's: the stack's);
                  locally, an admin's also what each synced source last did (never a 503)
GET /.well-known/oauth-protected-resource
                  the MCP endpoint's protected-resource metadata (RFC 9728): where its tokens
                  come from (the stack's Cognito user pool), as MCP's authorization asks
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel

from docchat.answer.backend import ChatBackend
from docchat.errors import CallerUnknownError
from docchat.ingest.uploads import MAX_UPLOAD_BYTES
from docchat.limits import (
    MAX_DOC_IDS,
    MAX_FEEDBACK_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES,
    MAX_TITLE_CHARS,
    MAX_TOTAL_CHARS,
)
from docchat.models import DocStatus
from docchat.serve.access import Access
from docchat.serve.errors import documented, error_response, hide_paths
from docchat.serve.identity import page_url
from docchat.serve.state import WEB, AppState, SignIn, State

router = APIRouter()


class ChatLimits(BaseModel):
    """What one chat request may hold (docchat.limits), for the page to check before sending."""

    max_messages: int = MAX_MESSAGES
    max_message_chars: int = MAX_MESSAGE_CHARS
    max_total_chars: int = MAX_TOTAL_CHARS
    max_doc_ids: int = MAX_DOC_IDS
    max_title_chars: int = MAX_TITLE_CHARS
    # An answer's feedback comment (PUT /conversations/{id}/answers/{n}/feedback).
    max_feedback_chars: int = MAX_FEEDBACK_CHARS


class PageConfig(BaseModel):
    upload: str
    max_upload_bytes: int
    answers: str
    limits: ChatLimits


@router.get("/", include_in_schema=False)
def page(state: State) -> FileResponse:
    return FileResponse(
        WEB / "index.html", headers={"Cache-Control": "no-cache", **state.page_headers}
    )


@router.get("/config", responses=documented(404, 502, 503, 507))
def config(state: State) -> PageConfig:
    return PageConfig(
        upload=state.uploads_kind,
        max_upload_bytes=MAX_UPLOAD_BYTES,
        answers=state.backend.mode,
        limits=ChatLimits(),
    )


@router.get("/auth-config", responses=documented())
def auth_config(state: State) -> SignIn:
    return state.sign_in


class ProtectedResource(BaseModel):
    """RFC 9728 metadata of the MCP endpoint: with Cognito its tokens are the user pool's."""

    resource: str
    resource_name: str = "docchat"
    authorization_servers: list[str]
    bearer_methods_supported: list[str] = ["header"]
    scopes_supported: list[str]


@router.get("/.well-known/oauth-protected-resource", responses=documented())
def protected_resource(state: State, request: Request) -> ProtectedResource:
    sign_in = state.sign_in
    return ProtectedResource(
        resource=f"{page_url(request)}mcp",
        authorization_servers=[sign_in.issuer] if sign_in.issuer else [],
        scopes_supported=sign_in.scopes.split() if sign_in.issuer else [],
    )


@router.get("/ready", responses=documented())
def ready() -> dict[str, str]:
    """The Web Adapter's readiness check: the server answers. It touches no backend, so a
    failing dependency cannot keep the function from ever becoming ready."""
    return {"status": "ready"}


@router.get("/health", responses=documented(401, 503))
def health(state: State, request: Request) -> JSONResponse:
    """Each dependency's state. The document and chunk counts are of what the caller may read:
    a reader of one collection learns nothing of the others' size; an admin (and the single
    local user) gets the stack's totals, the chunks as the index itself counts them."""
    access, checks, problems = _caller(state, request)
    found, failed = _dependency_checks(state, access)
    checks.update(found)
    problems += failed
    if problems:
        return error_response(503, f"a dependency failed: {'; '.join(problems)}", checks=checks)
    return JSONResponse({"status": "ok", "checks": checks})


def _caller(state: AppState, request: Request) -> tuple[Access, dict[str, Any], list[str]]:
    """The caller's access, and a failed `access` check when their rights could not be read
    (the cloud's groups mapping lives in S3): then they are counted as a reader of nothing,
    and /health still reports every dependency instead of failing itself. An unknown caller
    is a 401 as on every route."""
    try:
        return state.access(request), {}, []
    except CallerUnknownError:
        raise
    except Exception as exc:
        said = hide_paths(str(exc))
        check = {"status": "failed", "problem": f"{type(exc).__name__}: {said}"}
        return Access(user=""), {"access": check}, [f"access: {said}"]


def _dependency_checks(state: AppState, access: Access) -> tuple[dict[str, Any], list[str]]:
    """Each dependency's state for /health, and what failed. Any exception is a finding here,
    not an error: reporting it is the route's job."""
    checks: dict[str, Any] = {}
    problems: list[str] = []

    def probe(name: str, call: Callable[[], dict[str, Any]]) -> None:
        try:
            checks[name] = {"status": "ok", **call()}
        except Exception as exc:
            said = hide_paths(str(exc))  # the server's paths stay in its log
            code = getattr(exc, "code", "")
            checks[name] = {
                "status": "failed",
                "problem": f"{type(exc).__name__}: {said}",
                **({"code": code} if code else {}),
            }
            problems.append(f"{name}: {said}")

    probe("backend", lambda: {"mode": state.backend.mode})
    if problems:
        return checks, problems
    live = state.backend
    probe("registry", lambda: {"documents": len(_readable(live, access).library.documents())})
    probe("index", lambda: {"chunks": _chunks(live, access)})
    checks["model"] = {"status": "ok" if live.model else "none", "mode": live.mode}
    lifecycle = state.parts.model_lifecycle
    if lifecycle is not None:
        checks["model"]["lifecycle"] = _model_lifecycle(lifecycle)
    synced = state.parts.sources
    if synced is not None and access.admin:
        # A sync's failures are the site's, not the server's: reported, never a 503.
        try:
            checks["sources"] = {"status": "ok", **synced()}
        except Exception as exc:
            checks["sources"] = {"status": "unreadable", "problem": hide_paths(str(exc))}
    library = live.library
    checks["reranker"] = (
        {"status": "off", "note": library.rerank_off}
        if library.rerank_off
        else {"status": "ok" if library.reranker else "none"}
    )
    return checks, problems


def _readable(live: ChatBackend, access: Access) -> ChatBackend:
    return live if access.admin else live.within(access.visible())


def _chunks(live: ChatBackend, access: Access) -> int | None:
    """The index's own count for an admin; for a reader, the chunks of the indexed documents
    they may read (the index is still asked, so that an unreachable one fails the check)."""
    count = getattr(live.library.index, "count", None)
    total = count() if callable(count) else None
    if access.admin:
        return total
    records = _readable(live, access).library.documents()
    return sum(r.chunks for r in records if r.status == DocStatus.INDEXED)


def _model_lifecycle(lifecycle: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Whether Bedrock marks the chat model LEGACY. Not a failed dependency either way: a
    LEGACY model still answers, and a lookup the role may not make says what to grant."""
    try:
        return lifecycle()
    except Exception as exc:
        return {"status": "unknown", "problem": hide_paths(str(exc))}
