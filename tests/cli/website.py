"""A real web site on 127.0.0.1 for `docchat sync` tests: stdlib http.server in a thread,
serving pages the test sets (and changes), answering conditional GETs the way a server does,
and recording every request it gets (path, headers, when)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

HTML = "text/html; charset=utf-8"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@dataclass
class Page:
    body: bytes
    content_type: str = HTML
    validator: Literal["etag", "last-modified", "none"] = "etag"
    status: int = 200
    modified: float = field(default_factory=time.time)
    #: Sent as the Location header (with a 3xx status: a redirect there).
    location: str = ""
    #: When set, the answer waits until the test sets it (a page still loading).
    hold: threading.Event | None = None


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]
    at: float


@dataclass
class Site:
    """What the server serves (path -> Page) and what it was asked."""

    pages: dict[str, Page] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    base: str = ""

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def url(self, path: str) -> str:
        return self.base + path


def page(title: str, text: str, *links: str) -> bytes:
    """A small HTML page with a title, a paragraph and links."""
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
        f"<p>{text}</p><ul>{anchors}</ul></body></html>"
    ).encode()


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.requests.append(Request(self.path, dict(self.headers.items()), time.monotonic()))
            found = site.pages.get(self.path)
            if found is None:
                self._answer(404, b"not found", "text/plain")
                return
            if found.hold is not None:
                found.hold.wait(timeout=60)
            if found.status != 200:
                moved = {"Location": found.location} if found.location else None
                self._answer(found.status, b"failed", "text/plain", moved)
                return
            etag = '"' + hashlib.sha256(found.body).hexdigest()[:16] + '"'
            modified = formatdate(found.modified, usegmt=True)
            headers: dict[str, str] = {}
            if found.validator == "etag":
                headers["ETag"] = etag
                if self.headers.get("If-None-Match") == etag:
                    self._answer(304, b"", found.content_type, headers)
                    return
            elif found.validator == "last-modified":
                headers["Last-Modified"] = modified
                if self.headers.get("If-Modified-Since") == modified:
                    self._answer(304, b"", found.content_type, headers)
                    return
            self._answer(200, found.body, found.content_type, headers)

        def _answer(
            self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if status != 304:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serving(site: Site) -> Iterator[Site]:
    """`site` served on 127.0.0.1 (a free port) while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    site.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
