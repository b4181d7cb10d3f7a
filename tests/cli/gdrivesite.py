"""Google Drive API v3 and Google's OAuth 2.0 token endpoint on 127.0.0.1 for `docchat sync` of
a Google Drive source: graphsite's server answering with recorded responses
(tests/fixtures/gdrive, whose README cites the documentation pages they are copied or built
from) routed by method, path and query parameters in any order, and behaving as Google does
where a fixed file cannot: the token endpoint verifies the assertion's RS256 signature against
the service account's public key and its claims (issuer, scope, audience, an hour at most), and
answers invalid_grant otherwise; Drive refuses a request without the token it issued (401) and
gives only the fields a request names in its `fields` parameter."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.cli.graphsite import Graph, Recorded
from tests.cli.graphsite import recorded as _recorded
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "gdrive"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPE = "https://www.googleapis.com/auth/drive.readonly"
EMAIL = "docchat-sync@example-project.iam.gserviceaccount.com"
#: token.http's access token.
ACCESS_TOKEN = "1/8xbJqaOZXSUZbHLl5EOtu1pxz3fmmetKx9W8CV4t79M"


def recorded(name: str) -> Recorded:
    """The response tests/fixtures/gdrive/NAME.http holds."""
    return _recorded(name, folder=FIXTURES)


def key_pair() -> tuple[rsa.RSAPrivateKey, str]:
    """A throwaway RSA key and the service account JSON key file holding it (the shape of
    tests/fixtures/gdrive/service-account-key.json, Google's key file format)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    key = json.loads((FIXTURES / "service-account-key.json").read_text(encoding="utf-8"))
    key.update(private_key=pem, client_email=EMAIL)
    return private, json.dumps(key)


def route_key(method: str, path: str, **params: str) -> str:
    """How a request is routed: its method, path and query parameters sorted (but `fields`)."""
    query = urlencode(sorted(params.items()))
    return f"{method} {path}" + (f"?{query}" if query else "")


@dataclass
class Assertion:
    """A verified assertion's claims."""

    claims: dict[str, object]


class Drive(Graph):
    """What the server answers, what it was asked, and the public key of the service account
    (None: the key was deleted, and every assertion is refused)."""

    def __init__(self, public: rsa.RSAPublicKey | None) -> None:
        super().__init__()
        self.public = public
        self.assertions: list[Assertion] = []

    def _here(self, text: bytes) -> bytes:
        return text

    def routes_asked(self) -> list[str]:
        """Each request's route (`route_key`): its method, path and parameters but `fields`."""
        routes = []
        for asked in self.requests:
            path, _, query = asked.path.partition("?")
            params = dict(parse_qsl(query, keep_blank_values=True))
            params.pop("fields", None)
            routes.append(route_key(asked.method, path, **params))
        return routes

    def _answer(self, key: str) -> Recorded | None:
        asked = self.requests[-1]
        method, _, target = key.partition(" ")
        path, _, query = target.partition("?")
        if method == "POST" and path == "/token":
            return self._token(asked.form)
        if asked.headers.get("Authorization") != f"Bearer {ACCESS_TOKEN}":
            return recorded("invalid-credentials")
        params = dict(parse_qsl(query, keep_blank_values=True))
        fields = params.pop("fields", "")
        found = super()._answer(route_key(method, path, **params))
        if found is None or not fields or found.status != 200:
            return found
        body = json.loads(found.body)
        return Recorded(found.status, found.headers, json.dumps(_only(body, fields)).encode())

    def _token(self, form: dict[str, list[str]]) -> Recorded:
        """Google's token endpoint: a token for a well-formed assertion the key signed."""
        (grant,) = form.get("grant_type", [""])
        (assertion,) = form.get("assertion", [""])
        claims = self._verified(assertion) if grant == GRANT else None
        if claims is None:
            return recorded("token-invalid-grant")
        self.assertions.append(Assertion(claims))
        return recorded("token")

    def _verified(self, assertion: str) -> dict[str, object] | None:
        parts = assertion.split(".")
        if len(parts) != 3 or self.public is None:
            return None
        header, claims = (json.loads(_unb64(p)) for p in parts[:2])
        try:
            self.public.verify(
                _unb64(parts[2]),
                f"{parts[0]}.{parts[1]}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except InvalidSignature:
            return None
        now = time.time()
        fine = (
            header.get("alg") == "RS256"
            and claims.get("iss") == EMAIL
            and claims.get("scope") == SCOPE
            and claims.get("aud") == f"{self.base}/token"
            and abs(claims.get("iat", 0) - now) < 300
            and 0 < claims.get("exp", 0) - claims.get("iat", 0) <= 3600
        )
        return dict(claims) if fine else None


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _only(value: object, fields: str) -> object:
    """`value` with only the fields a `fields` parameter names (`a,b(c,d)`), as Drive gives."""
    if isinstance(value, list):
        return [_only(v, fields) for v in value]
    if not isinstance(value, dict):
        return value
    kept: dict[str, object] = {}
    for name, inner in _parsed(fields):
        if name in value:
            kept[name] = _only(value[name], inner) if inner else value[name]
    return kept


def _parsed(fields: str) -> list[tuple[str, str]]:
    """`a,b(c,d(e))` as [(a, ""), (b, "c,d(e)")]."""
    parsed: list[tuple[str, str]] = []
    depth, start, name = 0, 0, ""
    for i, ch in enumerate(fields + ","):
        if ch == "(" and depth == 0:
            name, start = fields[start:i], i + 1
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                parsed.append((name.strip(), fields[start:i]))
                name, start = "", i + 2
        elif ch == "," and depth == 0:
            if fields[start:i].strip():
                parsed.append((fields[start:i].strip(), ""))
            start = i + 1
    return parsed
