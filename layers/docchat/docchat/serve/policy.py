"""The page's Content-Security-Policy: what the page, pdf.js and the sign-in need, nothing more.

- Scripts: the page's own files, and its inline scripts by hash (read from index.html when the
  policy is made, so that a changed page keeps a matching policy). pdf.js is a module imported
  from /static and runs its worker as a module worker from the same folder: `worker-src 'self'`
  (pdf.js wraps a worker in a blob: URL only when it comes from another origin).
- Fetches: the API itself, the Cognito managed-login domain (the page POSTs to its token and
  revoke endpoints; the sign-in itself is a navigation, which the policy does not govern) and
  the documents bucket's origin where uploads and the viewer use presigned S3 URLs.
- `frame-ancestors 'none'` (and X-Frame-Options for browsers older than CSP 2): no other page
  may frame this one and trick clicks out of a signed-in user.
The app sends these on the page itself, locally and in the chat function alike, so API Gateway
passes them on as it does every header of the function's response.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

# An inline script or style: the element's text between its tags (no src attribute).
_INLINE = re.compile(
    r"<(script|style)\b(?![^>]*\bsrc\s*=)[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL
)


def page_headers(html: str, *, connect: Iterable[str]) -> dict[str, str]:
    """The security headers of the page `html`, which may fetch from the origins of `connect`
    (URLs; empty ones are skipped) besides its own."""
    scripts, styles = _inline_hashes(html)
    origins = sorted({_origin(url) for url in connect if url})
    directives = {
        "default-src": ["'none'"],
        "script-src": ["'self'", *scripts],
        "style-src": ["'self'", *styles],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'", *origins],
        "worker-src": ["'self'"],
        "form-action": ["'self'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
    }
    policy = "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())
    return {"Content-Security-Policy": policy, "X-Frame-Options": "DENY"}


def _inline_hashes(html: str) -> tuple[list[str], list[str]]:
    """The CSP hash sources of the page's inline scripts and inline styles."""
    scripts: list[str] = []
    styles: list[str] = []
    for tag, text in _INLINE.findall(html):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        (scripts if tag.lower() == "script" else styles).append(f"'sha256-{digest}'")
    return scripts, styles


def _origin(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL for the page's policy: {url!r}")
    return f"{parts.scheme}://{parts.netloc}"
