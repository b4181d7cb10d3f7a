"""`docchat serve`'s app, guards included, over a fresh data directory under a real uvicorn."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from docchat.config import Settings
from docchat.models import DocStatus, DocumentRecord
from docchat.wiring.local import guarded_local_app
from tests.chatkit import ServedApp, local_parts
from tests.pdfgen import make_pdf

PDF = make_pdf([[("h1", "Ferries"), ("body", "The ferry to the island leaves every hour.")]])


class GuardedServer:
    """The local app as `docchat serve` builds it (extractive answers, the word embedder)."""

    def __init__(
        self, data_dir: Path, *, token: str = "", allowed_hosts: Sequence[str] = ()
    ) -> None:
        self.settings = Settings(
            data_dir=data_dir, api_token=token, allowed_hosts=",".join(allowed_hosts)
        )
        parts = local_parts(self.settings)
        self.index, self.uploads, backend = parts.index, parts.uploads, parts.backend
        app = guarded_local_app(self.settings, lambda: backend, uploads=lambda _: self.uploads)
        self.served = ServedApp(app)

    @property
    def port(self) -> int:
        return self.served.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stored(self) -> list[Path]:
        """The files in the data directory's uploads folder (one folder per upload name)."""
        folder = self.settings.data_dir / "uploads"
        found = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
        return sorted(found, key=lambda p: p.name)

    def wait(self, doc_id: str) -> DocumentRecord:
        deadline = time.monotonic() + 30
        while True:
            record = self.index.document(doc_id)
            if record and record.status in (DocStatus.INDEXED, DocStatus.FAILED):
                return record
            assert time.monotonic() < deadline, f"{doc_id} is still {record}"
            time.sleep(0.05)

    def __enter__(self) -> GuardedServer:
        self.served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.served.stop()
        self.uploads.close()
        self.index.close()
