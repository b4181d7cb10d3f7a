"""The page and what it reads first, and the server's own state.

GET /             the chat page (docchat/web), with its Content-Security-Policy
GET /config       what the page needs to know: upload kind, size limits, answer mode, chat limits
GET /auth-config  how the page signs in (open in the cloud stack, like / and /static/)
GET /ready        the Web Adapter's readiness check (touches no backend)
GET /health       each dependency's state (registry, index, model); 503 if one fails
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel

from docchat.ingest.uploads import MAX_UPLOAD_BYTES
from docchat.limits import (
    MAX_DOC_IDS,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES,
    MAX_TITLE_CHARS,
    MAX_TOTAL_CHARS,
)
from docchat.serve.errors import documented, error_response, hide_paths
from docchat.serve.state import WEB, AppState, SignIn, State

router = APIRouter()


class ChatLimits(BaseModel):
    """What one chat request may hold (docchat.limits), for the page to check before sending."""

    max_messages: int = MAX_MESSAGES
    max_message_chars: int = MAX_MESSAGE_CHARS
    max_total_chars: int = MAX_TOTAL_CHARS
    max_doc_ids: int = MAX_DOC_IDS
    max_title_chars: int = MAX_TITLE_CHARS


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


@router.get("/ready", responses=documented())
def ready() -> dict[str, str]:
    """The Web Adapter's readiness check: the server answers. It touches no backend, so a
    failing dependency cannot keep the function from ever becoming ready."""
    return {"status": "ready"}


@router.get("/health", responses=documented(503))
def health(state: State) -> JSONResponse:
    checks, problems = _dependency_checks(state)
    if problems:
        return error_response(503, f"a dependency failed: {'; '.join(problems)}", checks=checks)
    return JSONResponse({"status": "ok", "checks": checks})


def _dependency_checks(state: AppState) -> tuple[dict[str, Any], list[str]]:
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
