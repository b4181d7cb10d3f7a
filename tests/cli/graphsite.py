"""Microsoft Graph and its token endpoint on 127.0.0.1 for `docchat sync` of a SharePoint source:
stdlib http.server in a thread answering each request with a recorded response
(tests/fixtures/graph, copied from the documentation pages their README cites) that the test
routes by method and path, and recording every request (path, headers, form)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "graph"
GRAPH_HOST = "https://graph.microsoft.com"
DOWNLOAD_HOST = "https://b0mpua-by3301.files.1drv.com"


@dataclass(frozen=True)
class Recorded:
    """One HTTP response: its status line, headers and body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


def recorded(name: str, *, folder: Path = FIXTURES) -> Recorded:
    """The response tests/fixtures/graph/NAME.http (or FOLDER/NAME.http) holds."""
    text = (folder / f"{name}.http").read_bytes()
    head, _, body = text.partition(b"\n\n")
    status_line, *header_lines = head.decode().splitlines()
    headers = tuple(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in header_lines)
    )
    return Recorded(int(status_line.split()[1]), headers, body.strip())


def file_bytes(data: bytes, content_type: str = "application/octet-stream") -> Recorded:
    """A download: a file's bytes."""
    return Recorded(200, (("Content-Type", content_type),), data)


@dataclass(frozen=True)
class Request:
    method: str
    host: str
    path: str
    headers: dict[str, str]
    form: dict[str, list[str]]


@dataclass
class Graph:
    """What the server answers ("METHOD /path?query" -> responses, served in turn, the last one
    again and again) and what it was asked."""

    routes: dict[str, deque[Recorded]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    base: str = ""
    download_base: str = ""

    def route(self, key: str, *answers: Recorded) -> None:
        self.routes[key] = deque(answers)

    def asked(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.requests]

    def _answer(self, key: str) -> Recorded | None:
        answers = self.routes.get(key)
        if not answers:
            return None
        return answers.popleft() if len(answers) > 1 else answers[0]

    def _here(self, text: bytes) -> bytes:
        return text.replace(GRAPH_HOST.encode(), self.base.encode()).replace(
            DOWNLOAD_HOST.encode(), self.download_base.encode()
        )


def _handler(graph: Graph) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve("GET", b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._serve("POST", self.rfile.read(length))

        def _serve(self, method: str, body: bytes) -> None:
            form = parse_qs(body.decode()) if body else {}
            host = self.headers.get("Host", "")
            graph.requests.append(
                Request(method, host, self.path, dict(self.headers.items()), form)
            )
            found = graph._answer(f"{method} {self.path}")
            if found is None:
                found = Recorded(599, (("Content-Type", "text/plain"),), b"no recorded response")
            data = graph._here(found.body)
            self.send_response(found.status)
            for name, value in found.headers:
                self.send_header(name, graph._here(value.encode()).decode())
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serving(graph: Graph) -> Iterator[Graph]:
    """`graph` served on 127.0.0.1 (a free port) while the block runs; downloads are asked of
    it as localhost, another host."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(graph))
    port = server.server_address[1]
    graph.base = f"http://127.0.0.1:{port}"
    graph.download_base = f"http://localhost:{port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield graph
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
