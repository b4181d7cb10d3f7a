"""Loopback stand-ins for what the page talks to in the cloud stack: Cognito's managed-login
OAuth endpoints, and API Gateway's stage with its Cognito authorizer in front of the app.

Each endpoint copies the shape Cognito documents:
- /oauth2/authorize: https://docs.aws.amazon.com/cognito/latest/developerguide/authorization-endpoint.html
  (response_type=code, client_id, redirect_uri, state, scope, code_challenge_method=S256,
  code_challenge; the user signs in on /login, then a 302 to redirect_uri?code=...&state=...)
- /oauth2/token: https://docs.aws.amazon.com/cognito/latest/developerguide/token-endpoint.html
  (POST, application/x-www-form-urlencoded; grant_type authorization_code with client_id, code,
  redirect_uri, code_verifier, or refresh_token with client_id, refresh_token; answers
  {"access_token", "id_token", "refresh_token", "token_type": "Bearer", "expires_in"}, a refresh
  without a new refresh_token; errors are HTTP 400 {"error": "invalid_grant" | ...})
- /oauth2/revoke: https://docs.aws.amazon.com/cognito/latest/developerguide/revocation-endpoint.html
  (POST token, client_id; HTTP 200 with an empty body)
- /logout: https://docs.aws.amazon.com/cognito/latest/developerguide/logout-endpoint.html
  (GET client_id, logout_uri: a sign-out URL of the client; 302 to it)
The gate answers as API Gateway does: HTTP 401 {"message": "Unauthorized"} without a valid
token (https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html,
UNAUTHORIZED), 403 {"message": "Missing Authentication Token"} outside the stage; it takes the
ID token, as a Cognito authorizer with no OAuth scopes on the method does
(https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-invoke-api-integrated-with-cognito-user-pool.html).
What it lets through carries the request context as the Lambda Web Adapter forwards it, in the
`x-amzn-request-context` header (whatever the client sent under that name is replaced), with
the token's claims under `authorizer.claims` on secured routes
(https://awslabs.github.io/aws-lambda-web-adapter/features/request-context.html).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import yaml
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from docchat.serve.app import SignIn
from tests.chatkit import ServedApp
from tests.conftest import REPO
from tests.infra.test_statemachine import CloudFormationLoader

CLIENT_ID = "4pagec1ient1d"
REQUEST_CONTEXT = b"x-amzn-request-context"
SCOPES = {"openid", "email"}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(claims: dict[str, Any]) -> str:
    """A token shaped like Cognito's JWTs (header.payload.signature); the gate checks it by
    lookup, so the signature is random."""
    header = {"kid": "fake", "alg": "RS256"}
    return ".".join(
        (
            _b64url(json.dumps(header).encode()),
            _b64url(json.dumps(claims).encode()),
            _b64url(secrets.token_bytes(32)),
        )
    )


@dataclass
class FakeCognito:
    """A user pool domain with one public app client and one user."""

    users: dict[str, str] = field(default_factory=lambda: {"ana@example.com": "correct horse"})
    lifetime_s: int = 3600
    page_url: str = ""  # the client's callback and sign-out URL, set once the page has a port
    url: str = ""
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    id_tokens: dict[str, float] = field(default_factory=dict)  # token -> expiry (epoch s)
    refresh_tokens: dict[str, str] = field(default_factory=dict)  # token -> user
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    grants: list[str] = field(default_factory=list)
    revoked: list[str] = field(default_factory=list)
    logouts: int = 0
    down: bool = False  # the token endpoint answers 503, as during an outage
    groups: dict[str, list[str]] = field(default_factory=dict)  # user -> Cognito groups

    def valid_id_token(self, token: str) -> bool:
        return self.id_tokens.get(token, 0) > time.time()

    def expire_id_tokens(self) -> None:
        """Every ID token issued so far stops working (as if its hour had passed)."""
        self.id_tokens = dict.fromkeys(self.id_tokens, 0.0)

    def revoke_everything(self) -> None:
        self.expire_id_tokens()
        self.refresh_tokens.clear()

    def tokens(self, user: str, *, refresh: bool) -> dict[str, Any]:
        """The tokens the token endpoint answers for `user` (tests that sign in without a page)."""
        return self._tokens(user, refresh=refresh)

    def _tokens(self, user: str, *, refresh: bool) -> dict[str, Any]:
        now = int(time.time())
        id_token = _jwt(
            {
                "sub": f"sub-{user}",
                "email": user,
                "aud": CLIENT_ID,
                "token_use": "id",
                "iss": self.url,
                "iat": now,
                "exp": now + self.lifetime_s,
                # As Cognito adds it to ID tokens of users in groups.
                **({"cognito:groups": self.groups[user]} if self.groups.get(user) else {}),
            }
        )
        self.id_tokens[id_token] = time.time() + self.lifetime_s
        body: dict[str, Any] = {
            "id_token": id_token,
            "access_token": _jwt({"token_use": "access", "client_id": CLIENT_ID, "exp": now}),
            "token_type": "Bearer",
            "expires_in": self.lifetime_s,
        }
        if refresh:
            body["refresh_token"] = secrets.token_urlsafe(48)
            self.refresh_tokens[body["refresh_token"]] = user
        return body

    def sign_in(self) -> SignIn:
        """How the page signs in against this fake: the chat function's COGNITO settings."""
        return SignIn(
            mode="cognito",
            region="us-east-1",
            domain=self.url,
            client_id=CLIENT_ID,
            scopes="openid email",
        )

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/oauth2/authorize")
        def authorize(request: Request) -> Response:
            query = dict(request.query_params)
            self.authorize_requests.append(query)
            problem = _authorize_problem(query, self.page_url)
            if problem:
                return HTMLResponse(f"<p>{html.escape(problem)}</p>", 400)
            return RedirectResponse(f"/login?{urlencode(query)}", 302)

        @app.get("/login")
        def login_page(request: Request) -> HTMLResponse:
            return HTMLResponse(_login_form(dict(request.query_params), error=""))

        @app.post("/login")
        async def login(request: Request) -> Response:
            form = await _form(request)
            user, password = form.pop("username", ""), form.pop("password", "")
            if self.users.get(user) != password:
                return HTMLResponse(_login_form(form, error="Incorrect username or password."))
            code = secrets.token_urlsafe(24)
            self.codes[code] = {**form, "user": user}
            return RedirectResponse(
                f"{form['redirect_uri']}?{urlencode({'code': code, 'state': form['state']})}", 302
            )

        @app.post("/oauth2/token")
        async def token(request: Request) -> Response:
            kind = request.headers.get("content-type", "")
            if not kind.startswith("application/x-www-form-urlencoded"):
                return _oauth_error("invalid_request")
            form = await _form(request)
            self.grants.append(form.get("grant_type", ""))
            if self.down:
                return _cors(JSONResponse({"message": "Service Unavailable"}, 503))
            if form.get("client_id") != CLIENT_ID:
                return _oauth_error("invalid_client")
            if form.get("grant_type") == "authorization_code":
                issued = self.codes.pop(form.get("code", ""), None)  # single use
                if issued is None or issued["redirect_uri"] != form.get("redirect_uri"):
                    return _oauth_error("invalid_grant")
                challenge = _b64url(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
                if challenge != issued["code_challenge"]:
                    return _oauth_error("invalid_grant")
                return _cors(JSONResponse(self._tokens(issued["user"], refresh=True)))
            if form.get("grant_type") == "refresh_token":
                user = self.refresh_tokens.get(form.get("refresh_token", ""))
                if user is None:
                    return _oauth_error("invalid_grant")
                return _cors(JSONResponse(self._tokens(user, refresh=False)))
            return _oauth_error("unsupported_grant_type")

        @app.post("/oauth2/revoke")
        async def revoke(request: Request) -> Response:
            form = await _form(request)
            if form.get("client_id") != CLIENT_ID:
                return _oauth_error("invalid_client")
            self.revoked.append(form.get("token", ""))
            self.refresh_tokens.pop(form.get("token", ""), None)
            return _cors(Response(status_code=200))

        @app.get("/logout")
        def logout(client_id: str = "", logout_uri: str = "") -> Response:
            if client_id != CLIENT_ID or logout_uri != self.page_url:
                return HTMLResponse("<p>Invalid request</p>", 400)
            self.logouts += 1
            return RedirectResponse(logout_uri, 302)

        return app


async def _form(request: Request) -> dict[str, str]:
    return dict(parse_qsl((await request.body()).decode(), keep_blank_values=True))


def _authorize_problem(query: dict[str, str], page_url: str) -> str:
    if query.get("client_id") != CLIENT_ID:
        return "unknown client_id"
    if query.get("redirect_uri") != page_url:
        return "redirect_mismatch"
    if query.get("response_type") != "code":
        return "unsupported_response_type"
    if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
        return "PKCE with S256 is required for this client"
    if not query.get("state") or not set(query.get("scope", "").split()) <= SCOPES:
        return "invalid_scope or missing state"
    return ""


def _login_form(fields: dict[str, str], *, error: str) -> str:
    hidden = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in fields.items()
    )
    alert = f'<p role="alert">{html.escape(error)}</p>' if error else ""
    return (
        "<!doctype html><title>Sign in</title><form method=post action=/login>"
        f"{hidden}{alert}"
        '<label>Email address <input name="username" type="email"></label>'
        '<label>Password <input name="password" type="password"></label>'
        "<button type=submit>Sign in</button></form>"
    )


def _oauth_error(error: str) -> Response:
    return _cors(JSONResponse({"error": error}, 400))


def _cors(response: Response) -> Response:
    # The page calls the token and revoke endpoints from its own origin; Cognito allows that
    # for browser apps (a form POST needs no preflight).
    response.headers["Access-Control-Allow-Origin"] = "*"
    return response


def open_operations() -> set[tuple[str, str]]:
    """The (path, method) pairs template.yaml's ChatApi leaves without security."""
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=CloudFormationLoader)
    paths = template["Resources"]["ChatApi"]["Properties"]["DefinitionBody"]["paths"]
    return {
        (path, method)
        for path, item in paths.items()
        for method, operation in item.items()
        if operation.get("security") == []
    }


@contextmanager
def served(fake: FakeCognito) -> Iterator[FakeCognito]:
    """`fake` answering on a loopback port (its `url`) while the block runs."""
    server = ServedApp(fake.app())
    fake.url = f"http://127.0.0.1:{server.port}"
    server.start()
    try:
        yield fake
    finally:
        server.stop()


class StageGate:
    """API Gateway's stage and Cognito authorizer in front of an ASGI app: paths under /v1 only,
    the template's open operations without a token, everything else with a valid ID token."""

    def __init__(self, app: Any, cognito: FakeCognito, *, stage: str = "/v1") -> None:
        self.app = app
        self.cognito = cognito
        self.stage = stage
        self.open = open_operations()
        self.calls: list[tuple[str, str, int]] = []  # method, path, status the gate answered
        self.tokens: list[str] = []  # tokens of the requests it let through to secured routes

    def is_open(self, method: str, path: str) -> bool:
        for route, allowed in self.open:
            if allowed not in (method.lower(), "x-amazon-apigateway-any-method"):
                continue
            if route.endswith("{proxy+}") and path.startswith(route.removesuffix("{proxy+}")):
                return True
            if path == route:
                return True
        return False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        if path == self.stage:  # the stage's bare URL is its root resource
            inner = "/"
        elif path.startswith(self.stage + "/"):
            inner = path.removeprefix(self.stage)
        else:
            await self._answer(send, method, path, 403, "Missing Authentication Token")
            return
        context: dict[str, Any] = {"stage": self.stage.strip("/"), "httpMethod": method}
        if not self.is_open(method, inner):
            headers = dict(scope["headers"])
            token = headers.get(b"authorization", b"").decode()
            if not self.cognito.valid_id_token(token):
                await self._answer(send, method, inner, 401, "Unauthorized")
                return
            self.tokens.append(token)
            context["authorizer"] = {"claims": _claims(token)}
        self.calls.append((method, inner, 0))
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != REQUEST_CONTEXT]
        headers.append((REQUEST_CONTEXT, json.dumps(context).encode()))
        forwarded = {
            **scope,
            "path": inner,
            "raw_path": inner.encode(),
            "root_path": "",
            "headers": headers,
        }
        await self.app(forwarded, receive, send)

    async def _answer(self, send: Any, method: str, path: str, status: int, message: str) -> None:
        self.calls.append((method, path, status))
        await JSONResponse({"message": message}, status)({"type": "http"}, _no_body, send)


def _claims(token: str) -> dict[str, Any]:
    """The payload of one of FakeCognito's JWTs."""
    payload = token.split(".")[1]
    padded = payload + "=" * (-len(payload) % 4)
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return claims


async def _no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}
