"""An index that grows (issue 30): writes, opening, search at 1M chunks, the catalog, first
answers and memory, each against a baseline measured in the same run.

Run from the repository root (the indexes are built once under bench/.data/, see
bench/index_data.py; the 1M one took 20 minutes at load 4-6):

    .venv/bin/python bench/index.py                 # the table, then its JSON
    .venv/bin/python bench/index.py --json out.json

Targets (the script exits 1 when one fails):
- search right after adding a 20-chunk document <= 1.5x an ordinary search (hybrid_search,
  p50), at 100k and 1M chunks;
- opening plus the first search at 1M chunks <= 2x the same at 10k (fresh processes, median);
- vector_search p50 at 1M <= 0.25x an exact numpy scan of the same vectors (k=10), with
  recall@10 >= 0.98 against it;
- Library.search <= 1.2x hybrid_search at 10,000 documents (p50; no reranker on either side);
- through POST /chat of `docchat serve --workers <cores>` (local embedder, sentence reranker,
  extractive answers, examples/pdfs): a question never asked <= 2x a repeated one (p50), and 4
  new questions at once done within 2.5x the time of one;
- peak RSS <= 1 GiB: `docchat ingest` of the largest PDF of ../shared/data (by size, and by
  pages), and `docchat serve` after 16 concurrent questions (its processes' peaks summed); RSS
  with the 1M index open and
  searched <= 1.5 GiB, with what it is made of.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.adapters.sqlite_index.graph import Graph
from docchat.config import Settings
from docchat.search.hybrid import hybrid_search
from docchat.search.library import Library
from index_data import (
    DATA,
    MODEL_ID,
    ROOT,
    SPECS,
    FixedEmbedder,
    Mixture,
    built,
    chunks_of,
    corpus,
    log,
    open_index,
    queries,
)
from report import table

DEFAULTS = Settings.from_env({})
SEARCH: dict[str, Any] = {
    "candidates": DEFAULTS.candidates,
    "fusion": DEFAULTS.fusion,
    "vector_weight": DEFAULTS.vector_weight,
}
SHARED = ROOT.parent / "shared" / "data"
GIB = 1024**3
QUESTIONS = [
    "Who must file Form 1040NR?",
    "When is the 2007 return due?",
    "What is effectively connected income?",
    "How are scholarship grants taxed?",
    "Which treaty benefits can a resident of Canada claim?",
    "What does the DMCA say about circumvention of technological measures?",
    "Which safe harbors limit the liability of service providers?",
    "What is the notice and takedown procedure?",
    "How long does the exemption for libraries last?",
    "What are the WIPO treaties?",
    "Who qualifies as a nonresident alien?",
    "How do I report wages from a US employer?",
    "What penalties apply to a late return?",
    "Can a nonresident claim the standard deduction?",
    "What is a closer connection to a foreign country?",
    "What does section 1201 prohibit?",
    "What are the conditions for system caching?",
    "How does the DMCA treat information location tools?",
    "What must a designated agent do?",
    "What about distance education?",
    "Where do I send Form 1040NR?",
    "How is social security tax handled for students?",
    "What is the substantial presence test?",
    "How is capital gain of a nonresident taxed?",
    "What is the rule for ephemeral recordings?",
    "What does the act say about encryption research?",
]


@dataclass(frozen=True)
class Row:
    measurement: str
    value: str
    baseline: str = "-"
    ratio: str = "-"
    budget: str = "-"
    result: str = "info"


HEADER = Row("measurement", "value", "baseline", "ratio", "budget", "result")


def p50(values: Sequence[float]) -> float:
    return float(np.percentile(values, 50))


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def judged(ratio: float, budget: float) -> str:
    return "PASS" if ratio <= budget else "FAIL"


# --- writes, catalog and search in this process ----------------------------------------------


def after_write_rows(name: str, asked: Sequence[tuple[str, np.ndarray]], rounds: int) -> list[Row]:
    """hybrid_search right after adding a 20-chunk document, against hybrid_search alone."""
    spec = SPECS[name]
    index = open_index(spec)
    embedder = FixedEmbedder(asked)
    texts = [text for text, _ in asked]
    _, pieces, _ = corpus()
    mixture = Mixture()

    def search(text: str) -> object:
        return hybrid_search(index, embedder, text, top_k=5, **SEARCH)

    for text in texts[:10]:
        search(text)
    ordinary, after = [], []
    for n in range(rounds):
        ordinary.extend(timed(lambda t=t: search(t)) for t in texts[10 + 3 * n : 13 + 3 * n])
        record, chunks = chunks_of(f"added{n:03d}", pieces, 7 * n, 20)
        index.replace_document(record, chunks, mixture.document(10_000_000 + n, 20))
        after.append(timed(lambda n=n: search(texts[n])))
    for n in range(rounds):
        index.delete_document(f"added{n:03d}")
    index.close()
    ratio = p50(after) / p50(ordinary)
    return [
        Row(
            f"{name}: hybrid_search right after adding 20 chunks",
            f"{p50(after):.1f} ms",
            f"ordinary {p50(ordinary):.1f} ms",
            f"{ratio:.2f}x",
            "<= 1.5x",
            judged(ratio, 1.5),
        )
    ]


def library_rows(name: str, asked: Sequence[tuple[str, np.ndarray]]) -> list[Row]:
    """Library.search (catalog, named documents, indexed versions) against hybrid_search."""
    index = open_index(SPECS[name])
    embedder = FixedEmbedder(asked)
    library = Library(index=index, embedder=embedder, registry=index, **SEARCH)
    sides: dict[str, Callable[[str], object]] = {
        "library": lambda q: library.search(q, top_k=5),
        # What Library.search asks of it without a reranker: twice top_k, to collapse repeats.
        "hybrid": lambda q: hybrid_search(index, embedder, q, top_k=10, **SEARCH),
    }
    texts = [text for text, _ in asked]
    for text in texts[:10]:
        for side in sides.values():
            side(text)
    times: dict[str, list[float]] = {side: [] for side in sides}
    for n, text in enumerate(texts):
        for side in list(sides)[:: 1 if n % 2 else -1]:
            times[side].append(timed(lambda s=side, t=text: sides[s](t)))
    documents = len(index.documents())
    index.close()
    ratio = p50(times["library"]) / p50(times["hybrid"])
    return [
        Row(
            f"{name}: Library.search at {documents:,} documents",
            f"{p50(times['library']):.1f} ms",
            f"hybrid_search {p50(times['hybrid']):.1f} ms",
            f"{ratio:.2f}x",
            "<= 1.2x",
            judged(ratio, 1.2),
        )
    ]


def scan_rows(name: str, asked: Sequence[tuple[str, np.ndarray]]) -> list[Row]:
    """vector_search against an exact numpy scan of the same vectors, and its recall@10."""
    index = open_index(SPECS[name])
    view = index._live.view()
    matrix = np.concatenate([np.asarray(p.segment.vectors) for p in view.parts])
    rows = np.concatenate([np.asarray(p.segment.rows) for p in view.parts])
    live = np.concatenate(
        [np.ones(len(p.segment), bool) if p.live is None else p.live for p in view.parts]
    )
    matrix, rows = matrix[live], rows[live]

    def exact(vector: np.ndarray) -> np.ndarray:
        scores = matrix @ vector
        top = np.argpartition(-scores, 10)[:10]
        return rows[top[np.argsort(-scores[top])]]

    vectors = [vector for _, vector in asked]
    for vector in vectors[:10]:
        exact(vector)
        index.vector_search(vector, k=10)
    scan, search, found, expected = [], [], [], []
    for n, vector in enumerate(vectors):
        order = [0, 1] if n % 2 else [1, 0]
        for side in order:
            if side == 0:
                scan.append(timed(lambda v=vector: expected.append(exact(v))))
            else:
                search.append(timed(lambda v=vector: found.append(index.vector_search(v, k=10))))
    ids = _chunk_ids(index, np.unique(np.concatenate(expected)))
    recall = statistics.mean(
        len({c for c, _ in got} & {ids[int(r)] for r in want}) / 10
        for got, want in zip(found, expected, strict=True)
    )
    graphs = sum(1 for p in view.parts if p.segment.graph is not None)
    index.close()
    ratio = p50(search) / p50(scan)
    ok = ratio <= 0.25 and recall >= 0.98
    return [
        Row(
            f"{name}: vector_search k=10 ({len(view.parts)} segments, {graphs} with graphs)",
            f"{p50(search):.2f} ms",
            f"numpy scan of {len(rows):,} {p50(scan):.1f} ms",
            f"{ratio:.3f}x",
            "<= 0.25x",
            "PASS" if ratio <= 0.25 else "FAIL",
        ),
        Row(
            f"{name}: recall@10 against the exact scan ({len(vectors)} queries)",
            f"{recall:.4f}",
            budget=">= 0.98",
            result="PASS" if ok else "FAIL",
        ),
    ]


def _chunk_ids(index: Any, rows: np.ndarray) -> dict[int, str]:
    with sqlite3.connect(index.path) as db:
        found = db.execute(
            "SELECT id, chunk_id FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([int(r) for r in rows]),),
        ).fetchall()
    db.close()
    return {int(row): str(chunk_id) for row, chunk_id in found}


# --- fresh processes -------------------------------------------------------------------------


def worker(kind: str, argument: str) -> dict[str, Any]:
    """Run `bench/index.py --worker kind argument` and read the JSON it prints."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, argument]
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    if result.returncode != 0:
        raise RuntimeError(f"worker {kind} {argument} failed:\n{result.stderr[-3000:]}")
    value: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return value


def open_rows(small: str, large: str, runs: int) -> list[Row]:
    """Opening and the first hybrid_search, each in a fresh process (imports done first); and
    what the sum is made of: opening alone (the graphs' views among it), the first search,
    and a second, never-asked question in the same process."""
    measured: dict[str, list[dict[str, float]]] = {small: [], large: []}
    for _ in range(runs):
        for name in (small, large):
            measured[name].append(worker("open", name))

    def median(name: str, key: str) -> float:
        return statistics.median(m[key] for m in measured[name])

    ratio = median(large, "ms") / median(small, "ms")
    parts = [
        ("opening alone", "open_ms"),
        ("  of it, the HNSW graphs' views (usearch)", "graphs_ms"),
        ("the first search, after opening", "first_ms"),
        ("a second, never-asked question", "next_ms"),
    ]
    return [
        Row(
            f"open + first hybrid_search, {large} chunks (median of {runs})",
            f"{median(large, 'ms'):.0f} ms",
            f"{small}: {median(small, 'ms'):.0f} ms",
            f"{ratio:.2f}x",
            "<= 2x",
            judged(ratio, 2.0),
        ),
        *(
            Row(
                f"  {label}, {large}",
                f"{median(large, key):.1f} ms",
                f"{small}: {median(small, key):.1f} ms",
                # (a 10k index has no graph: nothing to divide by)
                f"{median(large, key) / median(small, key):.2f}x"
                if median(small, key) >= 0.1
                else "-",
            )
            for label, key in parts
        ),
    ]


def open_first_search(name: str) -> dict[str, Any]:
    """In a worker: open the index and search once, then ask a second question. Every module
    the search uses is imported first, by searching a tiny index elsewhere (imports are a
    process's cost, not the index's)."""
    _, _, texts = corpus()
    asked = queries(3, texts)
    embedder = FixedEmbedder(asked)
    with tempfile.TemporaryDirectory() as folder:
        tiny = SPECS["10k"].__class__("tiny", 10, 10)
        warm = SqliteIndex(Path(folder) / "tiny.sqlite3", embedding_model=MODEL_ID, dimension=384)
        record, chunks = chunks_of("tiny", corpus()[1], 0, tiny.per_doc)
        warm.replace_document(record, chunks, Mixture().document(0, tiny.per_doc))
        hybrid_search(warm, embedder, asked[1][0], top_k=5, **SEARCH)
        Graph.build(Mixture().document(1, 64), Path(folder) / "g.usearch")
        Graph.open(Path(folder) / "g.usearch").candidates(asked[1][1], 4)
        warm.close()
    start = time.perf_counter()
    index = open_index(SPECS[name])
    opened = time.perf_counter()
    found = hybrid_search(index, embedder, asked[0][0], top_k=5, **SEARCH)
    first = time.perf_counter()
    hybrid_search(index, embedder, asked[2][0], top_k=5, **SEARCH)
    second = time.perf_counter()
    assert found, "the first search found nothing"
    # The graphs viewed again, alone: what opening spends in usearch.
    graphs = sorted(SPECS[name].path.parent.glob("*/*/graph.usearch"))
    viewing = timed(lambda: [Graph.open(path) for path in graphs])
    return {
        "ms": (first - start) * 1000,
        "open_ms": (opened - start) * 1000,
        "graphs_ms": viewing,
        "first_ms": (first - opened) * 1000,
        "next_ms": (second - first) * 1000,
    }


def loaded_memory(name: str) -> dict[str, Any]:
    """In a worker: RSS with the index open after 200 hybrid searches, by what it maps."""
    _, _, texts = corpus()
    asked = queries(200, texts)
    embedder = FixedEmbedder(asked)
    index = open_index(SPECS[name])
    for text, _ in asked:
        hybrid_search(index, embedder, text, top_k=5, **SEARCH)
    library = Library(index=index, embedder=embedder, registry=index, **SEARCH)
    for text, _ in asked[:20]:
        library.search(text, top_k=5)
    return {**_status(), "by_file": _resident_by_file()}


def _status(pid: str = "self") -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon and RssFile of a process, in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) * 1024
    return fields


def _resident_by_file(pid: str = "self") -> dict[str, int]:
    """Resident bytes per kind of mapping: each index file type, other files, anonymous."""
    found: dict[str, int] = {}
    kind = "anonymous"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            path = head[5] if len(head) > 5 else ""
            kind = _kind(path)
        elif head and head[0] == "Rss:":
            found[kind] = found.get(kind, 0) + int(head[1]) * 1024
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def _kind(path: str) -> str:
    if ".segments/" in path:
        return "segment " + Path(path).name
    if path.endswith((".so", ".pyd")) or ".so." in path:
        return "libraries"
    if path.startswith("/") and "index.sqlite3" in path:
        return "index.sqlite3 (mapped)"
    return "anonymous" if not path or path.startswith("[") else "other files"


def memory_rows(name: str) -> list[Row]:
    measured = worker("memory", name)
    parts = ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in list(measured["by_file"].items())[:6])
    rss = measured["VmRSS"]
    return [
        Row(
            f"{name}: RSS open and searched (200 searches)",
            f"{rss / 2**20:.0f} MiB",
            f"peak {measured['VmHWM'] / 2**20:.0f} MiB",
            "-",
            "<= 1.5 GiB",
            "PASS" if rss <= 1.5 * GIB else "FAIL",
        ),
        Row(f"{name}: what the RSS is", parts),
    ]


# --- docchat serve and docchat ingest ---------------------------------------------------------


def _child_env() -> dict[str, str]:
    """The environment of the docchat commands run here: extractive answers, no model."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHAT_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(ROOT / "layers" / "docchat")
    return env


def _docchat(*args: str) -> list[str]:
    return [sys.executable, "-m", "docchat.cli", *args]


def chat_data() -> Path:
    """bench/.data/chat: examples/pdfs ingested by `docchat ingest` (the local embedder)."""
    folder = DATA / "chat"
    pdfs = sorted((ROOT / "examples" / "pdfs").glob("*.pdf"))
    stamp = {"format": "1", "pdfs": [[p.name, p.stat().st_size] for p in pdfs]}  # as JSON reads it
    stamp_file = folder / "stamp.json"
    if stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp:
        return folder
    building = folder.with_name("chat.building")
    shutil.rmtree(building, ignore_errors=True)
    log(f"ingesting {len(pdfs)} PDFs into {folder} (once) ...")
    subprocess.run(
        _docchat("ingest", "--data-dir", str(building), *map(str, pdfs)),
        check=True,
        env=_child_env(),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    stamp_file = building / "stamp.json"
    stamp_file.write_text(json.dumps(stamp))
    shutil.rmtree(folder, ignore_errors=True)
    building.rename(folder)
    return folder


class Served:
    """`docchat serve --workers N` over a copy of a data directory, on a free port of
    127.0.0.1."""

    def __init__(self, data: Path, workers: int) -> None:
        self.copy = Path(tempfile.mkdtemp(prefix="docchat-bench-"))
        shutil.copytree(data, self.copy / "data")
        self.port = _free_port()
        self.process = subprocess.Popen(
            _docchat(
                "serve",
                *("--data-dir", str(self.copy / "data"), "--port", str(self.port)),
                *("--workers", str(workers)),
            ),
            env=_child_env(),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=300)
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.client.get("/ready").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("docchat serve did not start")
            time.sleep(0.2)

    def ask(self, question: str) -> float:
        """Milliseconds until the answer's `done` event."""
        body = {"messages": [{"role": "user", "content": question}]}
        start = time.perf_counter()
        with self.client.stream("POST", "/chat", json=body) as response:
            response.raise_for_status()
            text = "".join(response.iter_text())
        if "event: done" not in text:
            raise RuntimeError(f"no done event for {question!r}: {text[-500:]}")
        return (time.perf_counter() - start) * 1000

    def together(self, questions: Sequence[str]) -> float:
        """Milliseconds until every one of `questions`, asked at once, is answered."""
        start = time.perf_counter()
        with ThreadPoolExecutor(len(questions)) as pool:
            list(pool.map(self.ask, questions))
        return (time.perf_counter() - start) * 1000

    def status(self) -> dict[str, int]:
        """_status of the server's processes (the supervisor and its workers), summed: an
        upper bound of what they hold, as pages they share count once in each."""
        summed: dict[str, int] = {}
        for pid in (self.process.pid, *_descendants(self.process.pid)):
            for key, value in _status(str(pid)).items():
                summed[key] = summed.get(key, 0) + value
        return summed

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.copy, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def chat_rows() -> list[Row]:
    """New against repeated questions, concurrency, and the server's memory after a burst, with
    a worker process per core (a question is mostly Python: threads of one process would take
    turns)."""
    workers = len(os.sched_getaffinity(0))
    server = Served(chat_data(), workers)
    try:
        server.ask("What is this about?")  # each worker loads its model before it serves
        new = [server.ask(q) for q in QUESTIONS[:8]]
        repeated = [server.ask(q) for q in QUESTIONS[:8]]
        # Three rounds of four questions never asked, each round at once, against one never
        # asked alone (the p50 of `new`).
        four = statistics.median(
            server.together(QUESTIONS[8 + 4 * r : 12 + 4 * r]) for r in range(3)
        )
        before = server.status()["VmRSS"]
        server.together(QUESTIONS[10:26])
        after = server.status()
    finally:
        server.close()
    first_ratio = p50(new) / p50(repeated)
    four_ratio = four / p50(new)
    peak = after["VmHWM"]
    return [
        Row(
            f"POST /chat, {workers} workers: a question never asked (to done)",
            f"{p50(new):.0f} ms",
            f"repeated {p50(repeated):.0f} ms",
            f"{first_ratio:.2f}x",
            "<= 2x",
            judged(first_ratio, 2.0),
        ),
        Row(
            f"POST /chat, {workers} workers: 4 new questions at once (all done)",
            f"{four:.0f} ms (median of 3 rounds)",
            f"one never asked {p50(new):.0f} ms",
            f"{four_ratio:.2f}x",
            "<= 2.5x",
            judged(four_ratio, 2.5),
        ),
        Row(
            f"docchat serve --workers {workers}: peak RSS after 16 concurrent questions (summed)",
            f"{peak / 2**20:.0f} MiB",
            f"before them {before / 2**20:.0f} MiB",
            "-",
            "<= 1 GiB",
            "PASS" if peak <= GIB else "FAIL",
        ),
    ]


def largest_pdfs() -> dict[str, Path]:
    """The largest PDF of ../shared/data by size, and the one with the most pages, among those
    docchat reads: PDFium opens them without a password (a damaged or encrypted file is
    refused, and would measure only the refusal)."""
    import pypdfium2 as pdfium

    pages: dict[Path, int] = {}
    for pdf in sorted(SHARED.rglob("*.pdf")):
        try:
            document = pdfium.PdfDocument(pdf)
        except pdfium.PdfiumError:
            continue
        pages[pdf] = len(document)
        document.close()
    if not pages:
        raise RuntimeError(f"no PDF that PDFium opens under {SHARED}")
    return {
        "size": max(pages, key=lambda p: p.stat().st_size),
        "pages": max(pages, key=lambda p: pages[p]),
    }


def ingest_rows() -> list[Row]:
    """`docchat ingest` of each largest PDF into a fresh data directory: its peak RSS. A run
    that does not leave the PDF indexed fails its row (docchat's output goes to stderr)."""
    rows = []
    for by, pdf in largest_pdfs().items():
        with tempfile.TemporaryDirectory(prefix="docchat-bench-") as data:
            start = time.perf_counter()
            process = subprocess.Popen(
                _docchat("ingest", "--data-dir", data, str(pdf)),
                env=_child_env(),
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            peak, converter, said = _peaks_until_done(process)
            seconds = time.perf_counter() - start
            indexed = _indexed(Path(data) / "index.sqlite3")
        ok = process.returncode == 0 and bool(indexed)
        if not ok:
            log(f"docchat ingest {pdf} exited {process.returncode}, nothing indexed:\n{said}")
        rows.append(
            Row(
                f"docchat ingest: peak RSS, largest by {by} ({pdf.name})",
                f"{peak / 2**20:.0f} MiB",
                f"{seconds:.0f} s, exit {process.returncode}, "
                f"{indexed or 'NOT INDEXED'}; conversion child {converter / 2**20:.0f} MiB",
                "-",
                "<= 1 GiB",
                "PASS" if peak <= GIB and ok else "FAIL",
            )
        )
    return rows


def _indexed(index: Path) -> str:
    """'N chunks' when the one document in the index at `index` is indexed; '' otherwise."""
    if not index.is_file():
        return ""
    with sqlite3.connect(index) as db:
        found = db.execute("SELECT status, chunks FROM documents").fetchall()
    db.close()
    if len(found) != 1 or found[0][0] != "INDEXED" or not found[0][1]:
        return ""
    return f"{found[0][1]} chunks"


def _peaks_until_done(process: subprocess.Popen[bytes]) -> tuple[int, int, str]:
    """The peak RSS (VmHWM) of `process` and the largest of its descendants', read from /proc
    until it exits, and what it printed (read by a thread, so that a full pipe never stalls
    it). Not ru_maxrss: a child started from this process (1.9 GiB after the exact
    scans) inherits its high-water mark across fork and exec."""
    assert process.stdout is not None
    printed: list[bytes] = []
    reader = threading.Thread(target=lambda: printed.append(process.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    peak = children = 0
    while process.poll() is None:
        try:
            peak = max(peak, _status(str(process.pid)).get("VmHWM", 0))
            for pid in _descendants(process.pid):
                children = max(children, _status(str(pid)).get("VmHWM", 0))
        except OSError:  # it or a child ended meanwhile
            pass
        time.sleep(0.1)
    reader.join()
    return peak, children, b"".join(printed).decode(errors="replace")


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *_descendants(int(child))]
    return found


def embedding_memory(config: str) -> dict[str, Any]:
    """In a worker: peak RSS and CPU time of embedding the largest-by-pages PDF's chunks and
    sentences, by how batches are made: `budget` (docchat's), `batch32` (32 texts whatever
    their length), `noarena` (32 texts, onnxruntime's memory arena off)."""
    from docchat.adapters import local_embedder
    from docchat.ingest.chunk import chunks_from_pages
    from docchat.ingest.stages import convert_pdf
    from docchat.search.rerank import scored_spans

    pdf = largest_pdfs()["pages"]
    converted = convert_pdf(pdf.read_bytes(), DEFAULTS, fallback_title=pdf.stem)
    chunks = chunks_from_pages(
        converted.pages,
        doc_id="d",
        version="v",
        source=str(pdf),
        title=converted.title,
        chunk_size=DEFAULTS.chunk_size,
        chunk_overlap=DEFAULTS.chunk_overlap,
    )
    sentences = [
        "\n".join(part for part in (c.context, s.text) if part)
        for c in chunks
        for s in scored_spans(c)
    ]
    if config != "budget":
        local_embedder.MAX_BATCH_TOKENS = 32 * local_embedder.MAX_TOKENS
    embedder = local_embedder.LocalEmbedder(batch_size=32)
    if config == "noarena":
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.enable_cpu_mem_arena = False
        model = local_embedder.verified(
            local_embedder.packaged_file(*local_embedder.MODEL_PACKAGE),
            local_embedder.MODEL_SHA256,
        )
        embedder.__dict__["_session"] = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
    before = _status()["VmHWM"]
    cpu = time.process_time()
    embedder.embed_documents([c.embed_text for c in chunks])
    embedder.embed_documents(sentences)
    return {
        "chunks": len(chunks),
        "sentences": len(sentences),
        "cpu_s": time.process_time() - cpu,
        "peak": _status()["VmHWM"],
        "before": before,
    }


def embedding_rows() -> list[Row]:
    found = {config: worker("embed", config) for config in ("budget", "batch32", "noarena")}
    base = found["batch32"]
    return [
        Row(
            f"embedding {found[c]['chunks']} chunks + {found[c]['sentences']} sentences: {c}",
            f"{found[c]['peak'] / 2**20:.0f} MiB peak",
            f"{found[c]['cpu_s']:.0f} s CPU",
            f"{found[c]['cpu_s'] / base['cpu_s']:.2f}x CPU",
        )
        for c in found
    ]


# --- the run ---------------------------------------------------------------------------------


def environment() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, numpy "
        f"{np.__version__}, {platform.machine()}, {os.cpu_count()} CPUs, load average {load}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10, help="documents added per size")
    parser.add_argument("--opens", type=int, default=3, help="fresh processes per size")
    parser.add_argument(
        "--large",
        default="1m",
        choices=sorted(SPECS),
        help="the index the 1M targets are measured on (387k: what a 1M build reached here)",
    )
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, argument = args.worker
        jobs = {"open": open_first_search, "memory": loaded_memory, "embed": embedding_memory}
        print(json.dumps(jobs[kind](argument)))
        return 0
    origin, pieces, texts = corpus()
    asked = queries(args.queries, texts)
    started = time.monotonic()
    for name in sorted({"10k", "100k", args.large}):  # built once, here when missing
        built(SPECS[name], origin, pieces)
    rows: list[Row] = []
    sections: list[Callable[[], list[Row]]] = [
        *(lambda n=name: after_write_rows(n, asked, args.rounds) for name in ("100k", args.large)),
        lambda: open_rows("10k", args.large, args.opens),
        lambda: scan_rows(args.large, asked),
        lambda: library_rows("100k", asked),
        lambda: memory_rows(args.large),
        chat_rows,
        ingest_rows,
        embedding_rows,
    ]
    for section in sections:
        found = section()
        for row in found:  # as they come: a later section that fails loses none of them
            log(" | ".join(asdict(row).values()))
        rows += found
    print(environment())
    print(
        f"Indexes: {origin} text, clustered random unit vectors of dimension 384 (not "
        f"embeddings), built through SqliteIndex.replace_document; {len(asked)} queries; "
        f"{time.monotonic() - started:.0f} s"
    )
    print(table(HEADER, rows))
    report = {"environment": environment(), "rows": [asdict(r) for r in rows]}
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 1 if any(r.result == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
