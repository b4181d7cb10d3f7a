"""A Google service account's JSON key, and the assertion it signs for Google's OAuth 2.0 token
endpoint (the JWT bearer flow of "Using OAuth 2.0 for Server to Server Applications"): a
header and claims, base64url-encoded and signed with RS256 (RSASSA-PKCS1-v1_5, SHA-256)."""

from __future__ import annotations

import base64
import json

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from pydantic import BaseModel, ValidationError

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: Google takes an assertion valid for at most an hour.
LIFETIME = 3600


class ServiceAccountKey(BaseModel):
    """What docchat reads of a service account's JSON key file."""

    type: str = ""
    client_email: str
    private_key: str
    private_key_id: str = ""


class TokenAnswer(BaseModel):
    """What docchat reads of the token endpoint's answer: a token, or an OAuth error."""

    access_token: str = ""
    error: str = ""
    error_description: str = ""


class UnusableKey(ValueError):
    """The key cannot be used: why, without any of its contents."""


def key_from(text: str) -> ServiceAccountKey:
    """The service account key `text` holds (a key file's contents), or UnusableKey saying what
    is wrong with it."""
    try:
        key = ServiceAccountKey.model_validate_json(text)
    except ValidationError as exc:
        # Never the error's own text: pydantic puts the input in it.
        missing = sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]})
        said = f"it lacks {', '.join(missing)}" if missing else "it is not JSON"
        raise UnusableKey(said) from None
    if key.type not in ("", "service_account"):
        raise UnusableKey(f"it is a {key.type} key")
    return key


def assertion(key: ServiceAccountKey, *, scope: str, audience: str, now: int) -> str:
    """The signed JWT the token endpoint `audience` takes for `key`'s account and `scope`,
    issued at `now` and valid for LIFETIME seconds."""
    header = {"alg": "RS256", "typ": "JWT"}
    if key.private_key_id:
        header["kid"] = key.private_key_id
    claims = {
        "iss": key.client_email,
        "scope": scope,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME,
    }
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    try:
        private = serialization.load_pem_private_key(key.private_key.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise UnusableKey("its private_key is not a PEM key") from exc
    if not isinstance(private, rsa.RSAPrivateKey):
        raise UnusableKey("its private_key is not an RSA key")
    signature = private.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64(signature)}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
