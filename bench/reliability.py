"""Every real PDF in ../shared/data/pdfs and a set of hostile files through docchat's isolated
converter: how many convert, fail with a typed reason, or crash; the slowest file; peak memory.
Then the local data safety cases of issue 12: each tried for real (a real server on loopback,
the `docchat` command, real SQLite; read-only and full disks are tmpfs mounts in a private mount
namespace, so those rows need root), how many were handled (indexed, or refused with a reason
that says what to do) and how many documents were lost. The server's door is tried the same way
against real `docchat serve` processes on 127.0.0.1: other sites' writes, foreign Host names,
chunked bodies past the limits (with the server's peak memory growth), the API token, server
paths in answers, blank questions and `/v1/models`; lost there also counts documents planted.

    .venv/bin/python bench/reliability.py [PDF_DIR]     # both tables
    .venv/bin/python bench/reliability.py --data-only   # only the data and server safety table
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import re
import resource
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from numpy.typing import NDArray
from reportlab.pdfgen.canvas import Canvas

from docchat.errors import ConversionError
from docchat.ingest import isolate
from docchat.ingest.convert.pageocr import LocalOcr
from docchat.ingest.convert.pdf import ConvertLimits
from docchat.ingest.isolate import pages_from_pdf_isolated
from docchat.ingest.ocr import OcrOptions
from docchat.ingest.shelf import Shelf

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "pdfs"
# OCR reads a page in seconds: the product's own time budget (DOCCHAT_CONVERT_TIMEOUT_S).
LIMITS = ConvertLimits(max_pages=5000, timeout_s=300)


def hostile_cases(sample: bytes) -> dict[str, bytes]:
    """Damaged and hostile variants of a real PDF, plus files that are not PDFs at all."""
    return {
        "zero bytes": b"",
        "text named .pdf": b"Not a PDF at all.\n" * 200,
        "header only": b"%PDF-1.7\n",
        **{f"truncated to {p}%": sample[: len(sample) * p // 100] for p in (5, 25, 50, 75, 95)},
        "broken xref": re.sub(rb"startxref\s+\d+", b"startxref\n99999999", sample),
        "bytes zeroed mid-file": sample[: len(sample) // 2]
        + bytes(4096)
        + sample[len(sample) // 2 + 4096 :],
        "garbage tail": sample + b"\x00\xff" * 50_000,
    }


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return 0
    # The servers' request logs (JSON lines on stdout) would bury the tables; warnings still show.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    if "--data-only" in sys.argv:
        return data_safety()
    code = pdfs()
    print()
    return max(code, data_safety())


def pdfs() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    if not folder.is_dir():
        print(f"no PDFs at {folder}: pass a folder of PDFs")
        return 1
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.pdf"))}
    # Each conversion child is forked from this process, as in Lambda: RUSAGE_CHILDREN (the
    # peak memory below) counts only this process's own children, and the forkserver docchat
    # starts them from elsewhere would make them its children instead.
    isolate.START_METHOD = "fork"
    sample = (ROOT / "examples" / "pdfs" / "dmca.pdf").read_bytes()
    cases = {**files, **{f"hostile: {k}": v for k, v in hostile_cases(sample).items()}}
    outcomes, reasons, slowest = conversion_outcomes(cases, ocr=LocalOcr(OcrOptions()))
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{'files tried':<28}{len(cases)} ({len(files)} real, {len(cases) - len(files)} hostile)")
    print(f"{'converted':<28}{outcomes['converted']}")
    print(
        f"{'typed errors':<28}{outcomes['typed error']} "
        f"({', '.join(f'{k} {v}' for k, v in reasons.most_common())})"
    )
    print(f"{'crashes':<28}{outcomes['crash']}")
    print(f"{'slowest file':<28}{slowest[0]:.2f} s ({slowest[1]})")
    print(f"{'peak memory (one child)':<28}{peak_mib:.0f} MiB")
    return 1 if outcomes["crash"] else 0


def conversion_outcomes(
    cases: dict[str, bytes],
    *,
    ocr: LocalOcr | None,
    limits: ConvertLimits = LIMITS,
    on_failure: Callable[[str, str], None] | None = None,
) -> tuple[Counter[str], Counter[str], tuple[float, str]]:
    """Each file through the isolated converter: counts of outcomes (converted, typed error,
    crash), of the typed errors' codes, and the slowest file (seconds, name); `on_failure`
    hears each file that did not convert, with its error."""
    outcomes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    slowest = (0.0, "")
    for name, data in cases.items():
        started = time.monotonic()
        try:
            pages_from_pdf_isolated(data, limits=limits, ocr=ocr)
            outcomes["converted"] += 1
        except ConversionError as exc:
            outcomes["typed error"] += 1
            reasons[exc.code] += 1
            if on_failure:
                on_failure(name, f"{exc.code}: {exc}")
        except Exception as exc:  # anything untyped is what this script exists to find
            outcomes["crash"] += 1
            print(f"CRASH {name}: {type(exc).__name__}: {exc}")
        slowest = max(slowest, (time.monotonic() - started, name))
    return outcomes, reasons, slowest


# --- local data safety (issue 12) -----------------------------------------------------------

DOCCHAT = Path(sys.executable).parent / "docchat"
HABIBI = SHARED / "py-pdf-sample-files" / "015-arabic" / "habibi.pdf"


@dataclass
class Case:
    name: str
    tried: int = 0
    handled: int = 0
    lost: int = 0
    note: str = ""


class HashEmbedder:
    """Bag-of-words vectors: enough to find a document by its words, and fast."""

    model_id = "bench-words"
    dimension = 64

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> NDArray[np.float32]:
        vectors = np.stack([self.embed_query(t) for t in texts]) if texts else np.zeros((0, 64))
        if on_batch:
            on_batch(len(texts))
        return vectors.astype(np.float32)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        vector = np.zeros(self.dimension, dtype=np.float32)
        for word in re.findall(r"\w+", text.casefold()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector


def _pdf(*lines: str, heading: str = "") -> bytes:
    buffer = io.BytesIO()
    canvas = Canvas(buffer, invariant=1)
    y = 780.0
    if heading:
        canvas.setFont("Helvetica-Bold", 20)
        canvas.drawString(72, y, heading)
        canvas.bookmarkPage("h")
        canvas.addOutlineEntry(heading, "h", level=0)
        y -= 30
    canvas.setFont("Helvetica", 10)
    for line in lines:
        canvas.drawString(72, y, line)
        y -= 13
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


class _Server:
    """docchat's app with direct uploads under a real uvicorn on 127.0.0.1 (a thread)."""

    def __init__(self, data_dir: Path) -> None:
        import uvicorn

        from docchat.adapters.sqlite_index import SqliteIndex
        from docchat.answer.backend import ChatBackend
        from docchat.config import Settings
        from docchat.ingest.uploads import LocalUploads
        from docchat.search.library import Library
        from docchat.serve.app import create_app
        from docchat.wiring import agent_config

        embedder = HashEmbedder()
        settings = Settings(data_dir=data_dir)
        self.index = SqliteIndex(settings.index_path, embedding_model="bench-words", dimension=64)
        self.uploads = LocalUploads(
            shelf=Shelf(self.index, self.index, self.index), embedder=embedder, settings=settings
        )
        library = Library(
            index=self.index,
            embedder=embedder,
            registry=self.index,
            candidates=settings.candidates,
            fusion=settings.fusion,
            vector_weight=settings.vector_weight,
        )
        backend = ChatBackend(
            library=library, model=None, config=agent_config(settings, index_sleeps=True)
        )
        app = create_app(lambda: backend, uploads=lambda _: self.uploads)
        self.port = _free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60)

    def upload(self, name: str, body: bytes) -> httpx.Response:
        return self.http.post(
            "/documents",
            params={"filename": name},
            content=body,
            headers={"content-type": "application/pdf"},
        )

    def close(self) -> None:
        self.uploads.close()
        self.http.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.index.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHAT_", "ANTHROPIC_"))}
    return {**keep, "DOCCHAT_MODEL_PROVIDER": "none"}


def _docchat(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DOCCHAT), *map(str, args)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
        check=False,
    )


def _status(data: Path) -> list[dict[str, Any]]:
    result = _docchat("status", "--json", "--data-dir", data)
    documents: list[dict[str, Any]] = (
        json.loads(result.stdout)["documents"] if result.stdout else []
    )
    return documents


def _typed(result: subprocess.CompletedProcess[str]) -> bool:
    """A refusal that says what happened: exit 2, an `error:` line, no traceback."""
    return result.returncode == 2 and "error:" in result.stderr and "Traceback" not in result.stderr


def _can_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = ["unshare", "-m", "--propagation", "private", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def _inside(script: str) -> subprocess.CompletedProcess[str]:
    """A shell script in a private mount namespace (its tmpfs mounts are seen by it alone)."""
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
        check=False,
    )


def _q(*args: str | Path) -> str:
    return " ".join(shlex.quote(str(a)) for a in args)


HOSTILE_NAMES = [
    "契約書.pdf",
    "報告書.pdf",
    "Résumé final.pdf",
    "Resume-final.pdf",
    "Re\u0301sume\u0301 final.pdf",  # the same name as above in NFD: one document
    "Übersicht.pdf",
    "Ubersicht.pdf",
    "Ελληνικά.pdf",
    "تقرير.pdf",
    "📄 notes.pdf",
    ".pdf",
    "..pdf",
    "....pdf",
    "a/b.pdf",
    "a\\b.pdf",
    "../../etc/passwd.pdf",
    "/etc/cron.d/x.pdf",
    "C:\\Windows\\win.pdf",
    "CON.pdf",
    "nul.pdf",
    "COM1.pdf",
    "a\x00b.pdf",
    "tab\there.pdf",
    "x" * 250 + ".pdf",
    "契" * 250 + ".pdf",
    "x" * 996 + ".pdf",  # longer than the API's 255: refused with a reason
]


def case_upload_names(tmp: Path) -> list[Case]:
    names = Case("uploads under hostile names (item 1)")
    again = Case("the same name uploaded again (item 1)")
    server = _Server(tmp / "data")
    owner: dict[str, str] = {}  # NFC name -> doc id
    words: dict[str, str] = {}  # doc id -> the word only its newest content has
    try:
        for n, name in enumerate(HOSTILE_NAMES):
            names.tried += 1
            word = f"zq{n:03d}marker"
            response = server.upload(name, _pdf(f"This upload carries the word {word}."))
            if response.status_code == 422 and "error" in response.json():
                names.handled += 1  # refused with the reason (too long a name)
                continue
            doc_id = response.json()["doc_id"]
            key = unicodedata.normalize("NFC", name)
            if (key in owner and owner[key] != doc_id) or (key not in owner and doc_id in words):
                names.lost += 1  # took another upload's place
                continue
            owner[key] = doc_id
            words[doc_id] = word
            names.handled += 1
        for n in range(3):
            again.tried += 1
            word = f"zqagain{n}marker"
            answer = server.upload("契約書.pdf", _pdf(f"Revision {n}: {word}.")).json()
            words[answer["doc_id"]] = word
            again.handled += answer["revision"] == n + 2
        server.uploads.close()
        for doc_id, word in words.items():
            chunks = server.index.document_chunks(doc_id)
            if not any(word in c.text for c in chunks):
                (again if "again" in word else names).lost += 1
        data = (tmp / "data").resolve()
        outside = [
            p for p in tmp.rglob("*") if p.is_file() and not p.resolve().is_relative_to(data)
        ]
        names.lost += len(outside)
        names.note = f"{len(owner)} documents, none outside the data dir"
    finally:
        server.close()
    return [names, again]


def case_storage(tmp: Path) -> list[Case]:
    read_only = Case("read-only data dir: status, search, ask, serve (item 4)")
    damaged = Case("damaged index: CLI and API (item 4)")
    full = Case("full disk: ingest batch, upload (item 4)")
    latin1 = Case("file names that are not UTF-8 (item 4)")
    pdfs = tmp / "pdfs"
    pdfs.mkdir()
    (pdfs / "notes.pdf").write_bytes(_pdf("The repairs cost four million euros."))
    seed = tmp / "seed"
    _docchat("ingest", pdfs, "--data-dir", seed)

    # A damaged index: not a database at all; pages torn after the header.
    for kind in ("garbage", "torn"):
        data = tmp / kind
        shutil.copytree(seed, data)
        (data / "uploads").mkdir()
        (data / "uploads" / "kept.pdf").write_bytes(b"%PDF-1.7 an upload")
        raw = (data / "index.sqlite3").read_bytes()
        broken = b"not a database\n" * 300 if kind == "garbage" else raw[:4096] + b"\xa5" * 8192
        (data / "index.sqlite3").write_bytes(broken)
        for command in (("status",), ("search", "repairs")):
            damaged.tried += 1
            result = _docchat(*command, "--data-dir", data)
            damaged.handled += _typed(result) and "is damaged" in " ".join(result.stderr.split())
        damaged.lost += not (data / "uploads" / "kept.pdf").is_file()
    # ... and the API over one
    from docchat.config import Settings
    from docchat.serve.app import create_app
    from docchat.wiring.local import served_local

    settings = Settings(data_dir=tmp / "garbage")
    backend, uploads = served_local(settings)
    served = _serve_app(create_app(backend, uploads=uploads))
    try:
        # /health reports the failed dependency as a 503 (as tests/cli/test_storage_faults.py)
        for route, status in (("/health", 503), ("/documents", 500)):
            damaged.tried += 1
            answer = httpx.get(f"http://127.0.0.1:{served[0]}{route}", timeout=60)
            damaged.handled += answer.status_code == status and "is damaged" in answer.text
    finally:
        served[1].should_exit = True

    # File names that are not UTF-8, in one folder with a plain one
    folder = tmp / "latin1"
    folder.mkdir()
    for raw_name in (b"caf\xe9.pdf", b"na\xefve r\xe9sum\xe9.pdf", b"\xff\xfe.pdf", b"plain.pdf"):
        with open(bytes(folder) + b"/" + raw_name, "wb") as handle:
            handle.write(_pdf(f"Document {raw_name!r} about ferries."))
        latin1.tried += 1
    result = _docchat("ingest", folder, "--data-dir", tmp / "latin1-data")
    indexed = [d for d in _status(tmp / "latin1-data") if d["status"] == "INDEXED"]
    latin1.handled = len(indexed) if "Traceback" not in result.stderr else 0
    latin1.lost = latin1.tried - len(indexed)

    if not _can_mount():
        for case in (read_only, full):
            case.note = "skipped: needs root and a private mount namespace"
        return [read_only, damaged, full, latin1]

    # A read-only file system holding the published index
    mount = tmp / "ro"
    mount.mkdir()
    out = tmp / "ro-out"
    out.mkdir()
    steps = [
        f"mount -t tmpfs -o size=64m bench {mount}",
        f"cp -a {seed} {mount}/data",
        f"mount -o remount,ro {mount}",
    ]
    checks = {
        "status": ("status", "--json"),
        "search": ("search", "repairs cost", "--json"),
        "ask": ("ask", "What did the repairs cost?", "--json"),
    }
    for label, args in checks.items():
        steps.append(f"{_q(DOCCHAT, *args, '--data-dir', mount / 'data')} > {out}/{label} 2>&1")
    result = _inside(" ; ".join(steps))
    for label in checks:
        read_only.tried += 1
        text = (out / label).read_text() if (out / label).exists() else ""
        read_only.handled += "four million euros" in text or '"INDEXED"' in text
    read_only.lost = 0 if '"INDEXED"' in (out / "status").read_text() else 1
    port = _free_port()
    serve = subprocess.Popen(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            " && ".join(steps[:3])
            + f" && exec {_q(DOCCHAT, 'serve', '--data-dir', mount / 'data', '--port', port)}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for(base)
        read_only.tried += 2
        listed = httpx.get(f"{base}/documents", timeout=60).json()["documents"]
        read_only.handled += len(listed) == 1
        refused = httpx.post(
            f"{base}/documents",
            params={"filename": "more.pdf"},
            content=_pdf("more"),
            headers={"content-type": "application/pdf"},
            timeout=60,
        )
        read_only.handled += refused.status_code == 409 and "read-only" in refused.text
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    del result

    # A disk that fills up during an ingest batch, then an upload larger than the free space
    mount = tmp / "full"
    mount.mkdir()
    first, more = tmp / "first", tmp / "more"
    first.mkdir()
    more.mkdir()
    (first / "notes.pdf").write_bytes(_pdf("The repairs cost four million euros."))
    for name in ("ferry.pdf", "zoo.pdf"):
        lines = [f"Line {n}: the {name[:-4]} timetable, boat {n}, at {n} past." for n in range(50)]
        (more / name).write_bytes(_pdf(*lines))
    data = mount / "data"
    script = " ; ".join(
        [
            f"mount -t tmpfs -o size=2m bench {mount}",
            _q(DOCCHAT, "ingest", first, "--data-dir", data) + " > /dev/null 2>&1",
            f"dd if=/dev/zero of={mount}/filler bs=4k 2> /dev/null",
            f"truncate -s -64k {mount}/filler",
            _q(DOCCHAT, "ingest", more, "--data-dir", data) + f" > {tmp}/full.txt 2>&1",
            _q(DOCCHAT, "status", "--json", "--data-dir", data) + f" > {tmp}/full.json",
            f"find {mount} -name '*.partial' > {tmp}/partial.txt",
        ]
    )
    _inside(script)
    report = " ".join((tmp / "full.txt").read_text().split())
    full.tried += 2
    full.handled += "FAILED (disk_full)" in report
    full.handled += "not tried (zoo.pdf)" in report
    before = json.loads((tmp / "full.json").read_text())["documents"]
    full.lost += sum(d["status"] != "INDEXED" for d in before) + (len(before) != 1)
    full.tried += 1
    full.handled += _upload_on_a_full_disk(tmp)
    return [read_only, damaged, full, latin1]


def _upload_on_a_full_disk(tmp: Path) -> bool:
    """An upload larger than the free space: a 507 in the JSON error shape, no partial file."""
    mount = tmp / "full-upload"
    mount.mkdir()
    port = _free_port()
    serve = subprocess.Popen(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            f"mount -t tmpfs -o size=400k bench {mount} && exec "
            + _q(DOCCHAT, "serve", "--data-dir", mount / "data", "--port", port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for(base)
        response = httpx.post(
            f"{base}/documents",
            params={"filename": "big.pdf"},
            content=_pdf("big") + b"%" + b"x" * 600_000,
            headers={"content-type": "application/pdf"},
            timeout=60,
        )
        files = subprocess.run(
            ["nsenter", "-t", str(serve.pid), "-m", "find", str(mount)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        return (
            response.status_code == 507 and "error" in response.json() and ".partial" not in files
        )
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def _serve_app(app: Any) -> tuple[int, Any]:
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return port, server


def _wait_for(base: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(f"{base}/documents/none", timeout=5)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def case_killed(tmp: Path) -> Case:
    """SIGKILL a real `docchat serve` while it embeds an upload; start it again."""
    case = Case("server killed while embedding, restarted (item 5)", tried=1)
    words = [f"{a}{b}" for a in ("ba", "ko", "mi", "ru", "te") for b in ("dal", "nor", "ves")]
    pages = [
        [" ".join(words[(p * 7 + n * 3 + k) % 15] for k in range(12)) for n in range(30)]
        for p in range(40)
    ]
    buffer = io.BytesIO()
    canvas = Canvas(buffer, invariant=1)
    for lines in pages:
        for n, line in enumerate(lines):
            canvas.drawString(72, 780 - 13 * n, line)
        canvas.showPage()
    canvas.save()
    data = tmp / "data"

    def start() -> tuple[subprocess.Popen[bytes], str]:
        port = _free_port()
        process = subprocess.Popen(
            [str(DOCCHAT), "serve", "--data-dir", str(data), "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**_env(), "DOCCHAT_EMBED_BATCH_SIZE": "1"},
        )
        base = f"http://127.0.0.1:{port}"
        _wait_for(base)
        return process, base

    process, base = start()
    doc_id = httpx.post(
        f"{base}/documents",
        params={"filename": "timetable.pdf"},
        content=buffer.getvalue(),
        headers={"content-type": "application/pdf"},
        timeout=60,
    ).json()["doc_id"]
    while httpx.get(f"{base}/documents/{doc_id}", timeout=60).json()["status"] in (
        "QUEUED",
        "CONVERTING",
    ):
        time.sleep(0.02)
    process.kill()
    process.wait()
    process, base = start()
    deadline = time.monotonic() + 300
    try:
        while (record := httpx.get(f"{base}/documents/{doc_id}", timeout=60).json())[
            "status"
        ] not in ("INDEXED", "FAILED"):
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=30)
    case.handled = int(record["status"] == "INDEXED" and record["chunks"] > 0)
    case.lost = 1 - case.handled
    return case


def case_text_and_names(tmp: Path) -> list[Case]:
    text = Case("PDFs whose only text is one line or a heading (item 6)")
    twins = Case("the same bytes under two paths (item 7)")
    exact = Case("rm: ambiguous, unknown, one path, an id (item 7)")
    folder = tmp / "text"
    folder.mkdir()
    samples = {"abc.pdf": ("abc", _pdf(heading="abc")), "line.pdf": ("ferry", _pdf("The ferry."))}
    samples["alike.pdf"] = ("boat", _pdf(*[f"Line {n}: the boat at {n}." for n in range(40)]))
    if HABIBI.is_file():
        samples["habibi.pdf"] = ("habibi", HABIBI.read_bytes())
    for name, (_, body) in samples.items():
        (folder / name).write_bytes(body)
    data = tmp / "text-data"
    _docchat("ingest", folder, "--data-dir", data)
    for name, (word, _) in samples.items():
        text.tried += 1
        hits = json.loads(_docchat("search", word, "--json", "--data-dir", data).stdout or "[]")
        found = any(Path(h.get("source", "")).name == name and word in h["text"] for h in hits)
        text.handled += found
        text.lost += not found

    a, b = tmp / "a", tmp / "b"
    for where in (a, b):
        where.mkdir()
        shutil.copy(ROOT / "examples" / "pdfs" / "dmca.pdf", where / "dmca.pdf")
        (where / f"notes-{where.name}.pdf").write_bytes(_pdf(f"Notes {where.name} on bridges."))
    data = tmp / "twins-data"
    _docchat("ingest", a, b, "--data-dir", data)
    documents = _status(data)
    twins.tried = 4
    dmca = [d for d in documents if Path(d["source"]).name == "dmca.pdf"]
    # Two documents of the same bytes, each INDEXED with its own chunks (the second copied)
    twins.handled = 2 * (
        len(dmca) == 2 and all(d["status"] == "INDEXED" and d["chunks"] for d in dmca)
    ) + sum(d["status"] == "INDEXED" for d in documents if "notes" in d["source"])
    hits = json.loads(
        _docchat("search", "circumvention", "--json", "--top-k", "10", "--data-dir", data).stdout
    )
    pairs = len(hits) - len({h["text"] for h in hits})
    twins.lost = 4 - twins.handled
    twins.note = f"{pairs} identical pairs in the top 10"

    exact.tried = 4
    exact.handled += (
        _typed(ambiguous := _docchat("rm", "dmca.pdf", "--data-dir", data))
        and "names 2 files" in ambiguous.stderr
    )
    exact.handled += _typed(_docchat("rm", "DMCA.PDF", "--data-dir", data))
    exact.handled += _docchat("rm", a / "dmca.pdf", "--data-dir", data).returncode == 0
    left = _status(data)
    notes = next(d for d in left if "notes-a" in d["source"])
    exact.handled += _docchat("rm", notes["doc_id"], "--data-dir", data).returncode == 0
    after = {Path(d["source"]).name for d in _status(data)}
    exact.lost = len({"dmca.pdf", "notes-b.pdf"} - after)  # what was not asked for must stay
    return [text, twins, exact]


# --- the local server's door (issue 12, items 2, 3, 8, 9, 10) ---------------------------------

MiB = 1024 * 1024


class _Serve:
    """A real `docchat serve` process on 127.0.0.1 (its own pid, so its memory can be read)."""

    def __init__(self, data: Path, *args: str) -> None:
        self.port = _free_port()
        self.data = data
        self.process = subprocess.Popen(
            [str(DOCCHAT), "serve", "--data-dir", str(data), "--port", str(self.port), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        self.base = f"http://127.0.0.1:{self.port}"
        _wait_for(self.base)

    def upload(self, name: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return httpx.post(
            f"{self.base}/documents", params={"filename": name}, content=body, headers=headers
        )

    def indexed(self, doc_id: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + 120
        while True:
            record: dict[str, Any] = httpx.get(
                f"{self.base}/documents/{doc_id}", headers=headers, timeout=60
            ).json()
            if record["status"] in ("INDEXED", "FAILED") or time.monotonic() > deadline:
                return record
            time.sleep(0.1)

    def stored(self) -> list[str]:
        folder = self.data / "uploads"
        return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


PDF_HEADERS = {"content-type": "application/pdf"}
QUESTION = {"messages": [{"role": "user", "content": "When does the ferry leave?"}]}


def _refused(response: httpx.Response, status: int, says: str) -> bool:
    """Refused with the status meant and a JSON error that says why."""
    try:
        message = str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return False
    return response.status_code == status and says in message


def case_cross_site(tmp: Path) -> list[Case]:
    writes = Case("writes from other sites: upload, delete, chat (item 2)")
    hosts = Case("foreign Host names, DNS rebinding (item 2)")
    server = _Serve(tmp / "data")
    try:
        kept = server.upload("ferry.pdf", _pdf("The ferry to the island leaves every hour."), {})
        # (no Content-Type above: refused as a no-cors fetch's body would be; then the real one)
        writes.tried += 1
        writes.handled += _refused(kept, 415, "Content-Type: application/pdf")
        kept = server.upload(
            "ferry.pdf", _pdf("The ferry to the island leaves every hour."), PDF_HEADERS
        )
        doc_id = kept.json()["doc_id"]
        server.indexed(doc_id)
        foreign = [
            {"origin": "http://evil.example"},
            {"origin": "null"},
            {"sec-fetch-site": "cross-site"},
            {"origin": "http://evil.example", "sec-fetch-site": "cross-site"},
        ]
        says = "another site may not change this docchat server"
        for headers in foreign:
            attempts = [
                server.upload("planted.pdf", _pdf("Planted."), {**PDF_HEADERS, **headers}),
                httpx.delete(f"{server.base}/documents/{doc_id}", headers=headers),
                httpx.post(f"{server.base}/chat", json=QUESTION, headers=headers, timeout=60),
            ]
            writes.tried += len(attempts)
            writes.handled += sum(_refused(a, 403, says) for a in attempts)
        # what a no-cors fetch sends: a Blob body without Content-Type, from another origin
        no_cors = {"origin": "http://evil.example", "sec-fetch-mode": "no-cors"}
        writes.tried += 1
        blob = server.upload("planted2.pdf", _pdf("Planted too."), no_cors)
        writes.handled += blob.status_code in (403, 415) and "error" in blob.json()

        for host in (
            "evil.example",
            f"evil.example:{server.port}",
            f"127.0.0.1.evil:{server.port}",
        ):
            attempts = [
                httpx.get(f"{server.base}{path}", headers={"host": host})
                for path in ("/", "/documents", "/config")
            ]
            attempts.append(
                server.upload("rebound.pdf", _pdf("Rebound."), {**PDF_HEADERS, "host": host})
            )
            hosts.tried += len(attempts)
            hosts.handled += sum(
                _refused(a, 403, f"does not answer to the host name '{host}'") for a in attempts
            )
        listed = httpx.get(f"{server.base}/documents").json()["documents"]
        files = server.stored()
        # planted: any other document listed, or any other file kept in the uploads folder
        planted = {d["source"] for d in listed if d["doc_id"] != doc_id} | (
            set(files) - {"ferry.pdf"}
        )
        rebound = {name for name in planted if name.startswith("rebound")}
        writes.lost = int(not any(d["doc_id"] == doc_id for d in listed))
        writes.lost += len(planted) - len(rebound) + int("ferry.pdf" not in files)
        hosts.lost = len(rebound)
        writes.note = f"{len(listed)} document(s) left, {len(planted)} planted, files: {files}"
        hosts.note = "GET /, /documents, /config and an upload, under 3 names"
    finally:
        server.close()
    return [writes, hosts]


def _peak_rss_mib(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _send_chunked(port: int, path: str, content_type: str, total: int) -> tuple[int, int]:
    """POST up to `total` bytes as HTTP/1.1 chunks (no Content-Length), 1 MiB at a time, until
    the server answers or closes; returns (status, bytes sent before the first answer byte)."""
    piece = b"x" * MiB
    sent = [0]
    answer = bytearray()
    answered_after: list[int] = []
    conn = socket.create_connection(("127.0.0.1", port), timeout=60)

    def read() -> None:
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            if not answered_after:
                answered_after.append(sent[0])
            answer.extend(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    try:
        conn.sendall(head.encode())
        while sent[0] < total and not answered_after:
            conn.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
            sent[0] += len(piece)
        conn.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server closed the connection: its answer is what counts
    deadline = time.monotonic() + 30
    while reader.is_alive() and b"\r\n\r\n" not in answer and time.monotonic() < deadline:
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)  # wakes the reader (close alone would not)
    reader.join(timeout=10)
    conn.close()
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    return status, answered_after[0] if answered_after else sent[0]


def case_chunked(tmp: Path) -> Case:
    case = Case("bodies without Content-Length, chunked (item 3)")
    server = _Serve(tmp / "data")
    growths = []
    try:
        for path, content_type, total in (
            ("/chat", "application/json", 100 * MiB),
            ("/documents?filename=big.pdf", "application/pdf", 160 * MiB),
        ):
            before = _peak_rss_mib(server.process.pid)
            status, sent = _send_chunked(server.port, path, content_type, total)
            growth = _peak_rss_mib(server.process.pid) - before
            growths.append(
                f"{path.split('?')[0]} {status} after {sent // MiB} of {total // MiB} MiB,"
                f" +{growth:.0f} MiB"
            )
            case.tried += 1
            case.handled += status == 413 and sent < total and growth < total / MiB
        case.lost = len(server.stored())
        case.note = "; ".join(growths)
    finally:
        server.close()
    return case


def case_token(tmp: Path) -> Case:
    case = Case("serve beyond loopback: no token refused; token needed (item 2)")
    for host in ("0.0.0.0", "::"):
        case.tried += 1
        command = [str(DOCCHAT), "serve", "--host", host, "--port", str(_free_port())]
        try:
            done = subprocess.run(
                [*command, "--data-dir", str(tmp / "d")],
                capture_output=True,
                text=True,
                env=_env(),
                timeout=60,
                check=False,
            )
        except subprocess.TimeoutExpired:
            continue  # it served to the network: not handled
        said = " ".join(done.stderr.split())
        case.handled += _typed(done) and "--token or DOCCHAT_API_TOKEN" in said
    token = "bench-token-" + hashlib.sha256(str(tmp).encode()).hexdigest()[:12]
    server = _Serve(tmp / "data", "--token", token)
    bearer = {"authorization": f"Bearer {token}"}
    try:
        attempts = [
            httpx.get(f"{server.base}/documents"),
            httpx.get(f"{server.base}/documents", headers={"authorization": "Bearer wrong"}),
            server.upload("planted.pdf", _pdf("Planted."), PDF_HEADERS),
            httpx.delete(f"{server.base}/documents/anything"),
            httpx.post(f"{server.base}/chat", json=QUESTION, timeout=60),
            httpx.get(f"{server.base}/v1/models"),
        ]
        case.tried += len(attempts)
        case.handled += sum(_refused(a, 401, "needs its API token") for a in attempts)
        case.tried += 1
        case.handled += httpx.get(f"{server.base}/documents", headers=bearer).status_code == 200
        case.lost = len(server.stored())
    finally:
        server.close()
    case.note = "0.0.0.0 and :: refused at start; 6 calls without the token 401"
    return case


def case_paths(tmp: Path) -> Case:
    case = Case("server paths in answers: API and CLI (item 8)")
    server = _Serve(tmp / "data")
    secret = str(tmp.resolve())
    answers: dict[str, str] = {}
    try:
        posted = server.upload(
            "ferry.pdf", _pdf("The ferry to the island leaves every hour."), PDF_HEADERS
        )
        doc_id = posted.json()["doc_id"]
        server.indexed(doc_id)
        answers["upload"] = posted.text
        answers["/documents"] = httpx.get(f"{server.base}/documents").text
        answers["/documents/{id}"] = httpx.get(f"{server.base}/documents/{doc_id}").text
        answers["/chat"] = httpx.post(f"{server.base}/chat", json=QUESTION, timeout=60).text
        answers["/v1/chat/completions"] = httpx.post(
            f"{server.base}/v1/chat/completions", json={**QUESTION, "model": "docchat"}, timeout=60
        ).text
    finally:
        server.close()
    folder = tmp / "private" / "contracts"
    folder.mkdir(parents=True)
    (folder / "notes.pdf").write_bytes(_pdf("The bridge reopens on Monday after repairs."))
    data = tmp / "cli-data"
    _docchat("ingest", folder, "--data-dir", data)
    answers["search --json"] = _docchat("search", "bridge", "--json", "--data-dir", data).stdout
    answers["ask --json"] = _docchat(
        "ask", "When does the bridge reopen?", "--json", "--data-dir", data
    ).stdout
    for where, text in answers.items():
        case.tried += 1
        named = (
            "ferry.pdf" in text
            if "search" not in where and "ask" not in where
            else ("notes.pdf" in text)
        )
        case.handled += named and secret not in text
        if secret in text:
            case.note += f" path in {where};"
    case.note = case.note or "named by file name in every answer, 7 of 7 without a path"
    return case


def case_blank_and_models(tmp: Path) -> list[Case]:
    blank = Case("blank questions: /chat, /v1/chat/completions, ask, search (item 10)")
    models = Case("/v1/models answers the OpenAI list (item 9)")
    server = _Serve(tmp / "data")
    try:
        for text in ("   ", "\n\t "):
            messages = [{"role": "user", "content": text}]
            chat = httpx.post(f"{server.base}/chat", json={"messages": messages}, timeout=60)
            completion = httpx.post(
                f"{server.base}/v1/chat/completions",
                json={"model": "docchat", "messages": messages},
                timeout=60,
            )
            blank.tried += 2
            blank.handled += _refused(chat, 422, "only white space")
            blank.handled += _refused(completion, 422, "only white space")
        listed = httpx.get(f"{server.base}/v1/models").json()
        models.tried = 1
        models.handled = int(
            listed.get("object") == "list"
            and [(m["id"], m["object"]) for m in listed["data"]] == [("docchat", "model")]
        )
        models.note = f"ids: {', '.join(m['id'] for m in listed.get('data', []))}"
    finally:
        server.close()
    for command, what in (("ask", "question"), ("search", "search query")):
        for text in ("   ", "\n\t "):
            blank.tried += 1
            done = _docchat(command, text, "--data-dir", tmp / "cli")
            said = " ".join(done.stderr.split())
            blank.handled += _typed(done) and f"the {what} is empty" in said and not done.stdout
    return [blank, models]


def data_safety() -> int:
    logging.getLogger("docchat").setLevel(logging.ERROR)  # the faults are on purpose here
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="docchat-safety-") as tmp:
        root = Path(tmp)
        parts = {
            name: root / name
            for name in (
                "names",
                "storage",
                "killed",
                "text",
                "cross-site",
                "chunked",
                "token",
                "paths",
                "blank",
            )
        }
        for path in parts.values():
            path.mkdir()
        cases = [
            *case_upload_names(parts["names"]),
            *case_storage(parts["storage"]),
            case_killed(parts["killed"]),
            *case_text_and_names(parts["text"]),
            *case_cross_site(parts["cross-site"]),
            case_chunked(parts["chunked"]),
            case_token(parts["token"]),
            case_paths(parts["paths"]),
            *case_blank_and_models(parts["blank"]),
        ]
    width = max(len(c.name) for c in cases) + 2
    print(f"local data and server safety ({time.monotonic() - started:.0f} s)")
    print(f"{'case':<{width}}{'tried':>6}{'handled':>9}{'lost':>6}  note")
    print("-" * (width + 40))
    for c in cases:
        print(f"{c.name:<{width}}{c.tried:>6}{c.handled:>9}{c.lost:>6}  {c.note}")
    ran = [c for c in cases if c.tried]
    print("-" * (width + 40))
    print(
        f"{'total':<{width}}{sum(c.tried for c in ran):>6}{sum(c.handled for c in ran):>9}"
        f"{sum(c.lost for c in ran):>6}"
    )
    failed = [c for c in ran if c.lost or c.handled != c.tried]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
