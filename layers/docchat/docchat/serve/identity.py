"""Who is asking: the user whose conversations a request may read and change.

Locally there is one user, `local` (serve/access.py:local_admin), unless `docchat serve
--users` names them in a users file (serve/access.py:UsersFile); neither reads this module. In
the cloud API Gateway's authorizer has checked the caller before the request reaches the
function, and the Lambda Web Adapter hands the event's `requestContext` to the app as JSON in
the `x-amzn-request-context` header
(https://awslabs.github.io/aws-lambda-web-adapter/features/request-context.html, whose example
reads `requestContext.authorizer.claims.sub`). The adapter writes that header from the
invocation event on every request, so a client cannot choose it; nothing else a client sends
(a body field, another header) names the user. With a REST API Cognito user pool authorizer
the token's claims are under `authorizer.claims`
(https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-enable-cognito-user-pool.html;
the proxy event's shape: https://docs.aws.amazon.com/powertools/typescript/2.13.0/api/types/_aws-lambda-powertools_parser.types.APIGatewayProxyEvent.html,
`requestContext.authorizer: {claims: Record<string, any>}`); with IAM authorization the caller's
ARN is `requestContext.identity.userArn`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from docchat.errors import CallerUnknownError

REQUEST_CONTEXT = "x-amzn-request-context"
#: Where a request's parsed context is kept, in its ASGI scope's state.
_PARSED_CONTEXT = "docchat.request_context"
#: Everyone with the URL, when the stack is deployed with ApiAuth=NONE.
ANONYMOUS_USER = "anonymous"

UserOf = Callable[[Request], str]


def cloud_user_for(api_auth: str) -> UserOf:
    """How the chat function names the caller under the stack's ApiAuth."""
    if api_auth == "COGNITO":
        return cognito_user
    if api_auth == "IAM":
        return iam_user
    return lambda _: ANONYMOUS_USER


def cognito_user(request: Request) -> str:
    """The Cognito `sub` the authorizer found in the ID token."""
    claims = _context(request).get("authorizer", {})
    sub = claims.get("claims", {}).get("sub") if isinstance(claims, dict) else None
    if not isinstance(sub, str) or not sub:
        raise _unknown("the sign-in's claims (requestContext.authorizer.claims.sub)")
    return sub


def iam_user(request: Request) -> str:
    """The IAM principal that signed the request."""
    identity = _context(request).get("identity", {})
    arn = identity.get("userArn") if isinstance(identity, dict) else None
    if not isinstance(arn, str) or not arn:
        raise _unknown("the caller's IAM identity (requestContext.identity.userArn)")
    return f"iam:{arn}"


def page_url(request: Request) -> str:
    """The chat page's address as the caller reached this request: behind API Gateway the
    stage's (the request context's `domainName`, and its `path` less the route), else the
    request's own base URL."""
    try:
        context = _context(request)
    except CallerUnknownError:
        return str(request.base_url)
    domain, path = context.get("domainName"), context.get("path")
    route = request.url.path
    if not (isinstance(domain, str) and isinstance(path, str) and path.endswith(route)):
        return str(request.base_url)
    return f"https://{domain}{path[: len(path) - len(route)]}/"


def request_context(request: Request) -> dict[str, Any] | None:
    """API Gateway's request context from the Web Adapter's header, or None without a usable
    one. Parsed once per request and kept in its ASGI scope's state: the user, the groups and
    the page's address all read it, some through more than one Request over the same scope."""
    state = request.scope.setdefault("state", {})
    if _PARSED_CONTEXT not in state:
        raw = request.headers.get(REQUEST_CONTEXT, "")
        try:
            context = json.loads(raw) if raw else None
        except ValueError:
            context = None
        state[_PARSED_CONTEXT] = context if isinstance(context, dict) else None
    parsed: dict[str, Any] | None = state[_PARSED_CONTEXT]
    return parsed


def _context(request: Request) -> dict[str, Any]:
    context = request_context(request)
    if context is None:
        raise _unknown(f"the {REQUEST_CONTEXT} header of API Gateway's request context")
    return context


def _unknown(what: str) -> CallerUnknownError:
    return CallerUnknownError(
        f"this request does not say who is asking: {what} is missing; call the API "
        "through its API Gateway stage, signed in",
    )
