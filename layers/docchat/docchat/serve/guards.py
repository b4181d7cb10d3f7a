"""The local server's door (`LocalGuard`).

`docchat serve` gets here what the cloud gets from API Gateway, Cognito and its own domain:
only loopback Host names (no DNS rebinding), no state changes from other sites, and a bearer
token once the server is reachable from other machines.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from docchat.serve.access import USER_TOKEN_NEEDED, UsersFile
from docchat.serve.errors import refusal

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The page and its files load without a token: the page is what asks for it.
PAGE = "/"
PAGE_FILES = "/static/"
# Marks the local server's own 401, so the page tells it apart from a gateway's.
TOKEN_CHALLENGE = 'Bearer realm="docchat-serve"'
API_TOKEN_NEEDED = (
    "this docchat server needs its API token: send it as 'Authorization: Bearer <token>' "
    "(the token given to docchat serve with --token or DOCCHAT_API_TOKEN)"
)


class LocalGuard:
    """The local server's door: Host names, cross-site writes and the API token."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Iterable[str] = (),
        token: str = "",
        users: UsersFile | None = None,
    ) -> None:
        self.app = app
        # With a users file every caller, this machine's too, sends one of its users' tokens.
        self.users = users
        names = {host_name(h) for h in allowed_hosts if h.strip()}
        self.any_host = "*" in names
        self.hosts = LOOPBACK_HOSTS | names
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self.refusal(scope)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> JSONResponse | None:
        """Why this request may not reach the app, as the response to send; None lets it in."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.any_host and host_name(host) not in self.hosts:
            return refusal(
                scope,
                403,
                f"this docchat server does not answer to the host name {host!r}: it serves "
                "localhost, 127.0.0.1 and [::1]; add other names with --allowed-host or "
                "DOCCHAT_ALLOWED_HOSTS",
            )
        if scope["method"] in STATE_CHANGING:
            cross = cross_site(headers, host)
            if cross:
                return refusal(scope, 403, cross)
        if not self.token and self.users is None:
            if _local_client(scope):
                return None
            return refusal(
                scope,
                403,
                "this docchat server has no API token, so it answers only this machine: start "
                "it with --token or DOCCHAT_API_TOKEN to let other machines in",
            )
        if _is_page(scope) or self._token_matches(headers.get("authorization", "")):
            return None
        return refusal(
            scope,
            401,
            API_TOKEN_NEEDED if self.users is None else USER_TOKEN_NEEDED,
            headers={"WWW-Authenticate": TOKEN_CHALLENGE},
        )

    def _token_matches(self, authorization: str) -> bool:
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return False
        if self.users is not None:
            return self.users.by_token(given.strip()) is not None
        return hmac.compare_digest(given.strip().encode(), self.token.encode())


def cross_site(headers: Headers, host: str) -> str:
    """Why a state-changing request comes from another site ('' when it does not).

    Browsers send Sec-Fetch-Site and Origin on every cross-origin POST, `no-cors` included;
    clients that are not browsers (curl, the CLI, OpenAI SDKs) send neither and pass.
    """
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return (
            f"a page on another site may not change this docchat server (Sec-Fetch-Site: "
            f"{site}): use the page the server itself serves"
        )
    origin = headers.get("origin")
    if origin is not None and (origin == "null" or urlsplit(origin).netloc.lower() != host.lower()):
        return (
            f"a page on another site may not change this docchat server (Origin {origin} is not "
            f"this server, {host}): use the page the server itself serves"
        )
    return ""


def host_name(host: str) -> str:
    """The name in a Host header, without port, brackets, trailing dot or case."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else host
    name, colon, port = host.rpartition(":")
    if colon and ":" not in name and (port.isdigit() or not port):
        host = name
    return host.rstrip(".")


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    name = host_name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _local_client(scope: Scope) -> bool:
    """The peer is this machine: a loopback address, or a Unix socket (no address)."""
    client = scope.get("client")
    return client is None or is_loopback(str(client[0]))


def _is_page(scope: Scope) -> bool:
    path = str(scope.get("path", ""))
    return scope["method"] in ("GET", "HEAD") and (path == PAGE or path.startswith(PAGE_FILES))
