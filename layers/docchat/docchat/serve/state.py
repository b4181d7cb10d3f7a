"""What the routes share: the app's parts, each built on first use and then kept.

The wiring (docchat.wiring.local, docchat.wiring.cloud) hands `create_app` a `Parts`: how to
build the backend, the uploads, the viewer's files, the saved conversations and the page's
sign-in. `AppState` builds each once, when a request first needs it (a cold Lambda pays only for
what its first request touches), under one lock (two first requests on two threads build one).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, cast

from fastapi import Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from docchat.adapters.local_files import LocalFiles
from docchat.answer.backend import ChatBackend
from docchat.answer.events import ChatEvent
from docchat.answer.usage import UsageLedger, metered
from docchat.config import Settings
from docchat.errors import NotOfferedError
from docchat.models import Scope
from docchat.ports import ConversationStore, DocumentFiles, Uploads
from docchat.serve.access import Access, AccessOf, local_admin
from docchat.serve.policy import page_headers

T = TypeVar("T")
UploadsFactory = Callable[[ChatBackend], Uploads]
FilesFactory = Callable[[ChatBackend], DocumentFiles]
WEB = Path(__file__).parents[1] / "web"  # docchat/web: the page and its static files


class SignIn(BaseModel):
    """How the page signs in, from the settings: nothing (local, NONE), impossible (IAM: a
    browser cannot sign SigV4 requests) or Cognito managed login with this public client."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["none", "iam", "cognito"] = "none"
    region: str = ""
    domain: str = ""
    client_id: str = ""
    scopes: str = ""
    # The user pool's token issuer, MCP clients' authorization server (RFC 9728 metadata);
    # the page does not need it, so /auth-config leaves it out.
    issuer: str = Field(default="", exclude=True)

    @classmethod
    def from_settings(cls, settings: Settings) -> SignIn:
        if settings.api_auth == "COGNITO":
            return cls(
                mode="cognito",
                region=settings.region,
                domain=settings.auth_domain.rstrip("/"),
                client_id=settings.auth_client_id,
                scopes="openid email",
                issuer=(
                    f"https://cognito-idp.{settings.region}.amazonaws.com/{settings.auth_user_pool_id}"
                    if settings.auth_user_pool_id
                    else ""
                ),
            )
        return cls(mode="iam" if settings.api_auth == "IAM" else "none", region=settings.region)


def local_files(_: ChatBackend) -> DocumentFiles:
    """The viewer reads a document's PDF from where it was indexed (local mode)."""
    return LocalFiles()


def no_origins() -> Sequence[str]:
    """The page fetches from no origin but its own and its sign-in's."""
    return ()


@dataclass(frozen=True, kw_only=True)
class Parts:
    """How to build what the app serves. Without `uploads` the documents are read-only;
    `files` says where the viewer reads a PDF (by default the record's own local file); without
    `conversations` none are saved; `page_origins` are the other origins the page may fetch
    from (the documents bucket of presigned uploads and views); `access_of` says who the caller
    is (whose conversations a request reads and changes) and which collections they may read
    and write, for the routes and /mcp alike (docchat.serve.access); `model_lifecycle` what
    Bedrock says of the chat model (ACTIVE or LEGACY), for /health."""

    backend: Callable[[], ChatBackend]
    uploads: UploadsFactory | None = None
    files: FilesFactory = local_files
    sign_in: Callable[[], SignIn] = SignIn
    conversations: Callable[[], ConversationStore] | None = None
    # Where each answer's usage is kept (answer/usage.py); None: nowhere.
    usage: Callable[[], UsageLedger] | None = None
    page_origins: Callable[[], Sequence[str]] = no_origins
    access_of: AccessOf = local_admin
    # What Bedrock says of the chat model's lifecycle, for /health (None: not on Bedrock).
    model_lifecycle: Callable[[], dict[str, Any]] | None = None
    # What the data directory's synced sources last did, for /health (None: no sources here).
    sources: Callable[[], dict[str, Any]] | None = None


@dataclass
class AppState:
    """The app's parts, each built once on first use."""

    parts: Parts
    _built: dict[str, Any] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def _once(self, name: str, make: Callable[[], T]) -> T:
        with self._lock:
            if name not in self._built:
                self._built[name] = make()
            return cast(T, self._built[name])

    @property
    def backend(self) -> ChatBackend:
        return self._once("backend", self.parts.backend)

    @property
    def uploads(self) -> Uploads:
        """The uploads, or NotOfferedError (501) on a server that takes none."""
        make = self.parts.uploads
        if make is None:
            raise NotOfferedError(
                "this server does not take uploads: add documents with `docchat ingest`"
            )
        return self._once("uploads", lambda: make(self.backend))

    @property
    def uploads_kind(self) -> str:
        """How the page uploads: "direct", "presigned", or "none"."""
        try:
            return self.uploads.kind
        except NotOfferedError:
            return "none"

    @property
    def files(self) -> DocumentFiles:
        return self._once("files", lambda: self.parts.files(self.backend))

    def metered(
        self, events: Iterator[ChatEvent], http: Request, live: ChatBackend, scope: Scope
    ) -> Iterator[ChatEvent]:
        """`events`, their answer's usage kept for the caller once they end (when kept)."""
        make = self.parts.usage
        if make is None:
            return events
        return metered(
            events,
            lambda: self._once("usage", make),
            user=self.user(http),
            model=live.mode,
            document=live.library.registry.document,
            # An answer that cites nothing goes down to what the caller could read in it.
            scope=sorted(self.access(http).visible(scope).collections or ()),
        )

    @property
    def conversations(self) -> ConversationStore:
        """The saved conversations, or NotOfferedError (501) on a server that keeps none."""
        make = self.parts.conversations
        if make is None:
            raise NotOfferedError("this server keeps no conversations: send `messages` only")
        return self._once("conversations", make)

    @property
    def sign_in(self) -> SignIn:
        return self._once("sign_in", self.parts.sign_in)

    @property
    def page_headers(self) -> dict[str, str]:
        """The page's security headers: its Content-Security-Policy, fitted to the page and
        to where it signs in and fetches documents."""
        return self._once(
            "page_headers",
            lambda: page_headers(
                (WEB / "index.html").read_text(encoding="utf-8"),
                connect=[self.sign_in.domain, *self.parts.page_origins()],
            ),
        )

    def access(self, request: Request) -> Access:
        """What the caller may read and write (CallerUnknownError, a 401, when unknown), made
        once per request: a route that asks twice (what it may read, then whether it may
        change it) decides on one reading of the cloud's groups mapping, which may change
        between two."""
        made = getattr(request.state, "docchat_access", None)
        if made is None:
            made = request.state.docchat_access = self.parts.access_of(request)
        return cast(Access, made)

    def reader(self, request: Request, scope: Scope | None = None) -> ChatBackend:
        """The backend as the caller, asking within `scope`, sees it: nothing outside the
        collections they may read (and the scope) exists in it."""
        return self.backend.within(self.access(request).visible(scope))

    def asker(self, request: Request, scope: Scope) -> ChatBackend:
        """The backend a question in `scope` is answered from: a scope naming a collection the
        caller may not read is refused (AccessDeniedError, a 403), not answered from nothing."""
        access = self.access(request)
        access.check_read(scope.collections or ())
        return self.backend.within(access.visible(scope))

    def user(self, request: Request) -> str:
        """Who is asking (CallerUnknownError, a 401, when the request does not say)."""
        return self.access(request).user


async def app_state(request: Request) -> AppState:
    """The state of the app serving `request` (a FastAPI dependency; async, so that it
    takes no worker thread)."""
    return cast(AppState, request.app.state.docchat)


State = Annotated[AppState, Depends(app_state)]
