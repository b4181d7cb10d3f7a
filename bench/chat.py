"""Chat-path budgets: hybrid retrieval at 100k chunks, server overhead to the first SSE byte,
and the chat Lambda's import cost on Python 3.13.

Run from the repository root:

    .venv/bin/python bench/chat.py            # about 1 minute once the data is built
    .venv/bin/python bench/chat.py --help     # fewer queries/requests/runs

Built once under bench/.data/ (gitignored), a few minutes the first time:
- a SqliteIndex of 100,000 chunks: SciFact abstracts from ../shared/data/beir-scifact cut into
  ~3 chunks each and repeated under distinct ids (generated text if that folder is absent), in
  2,000 documents of 50 chunks. The vectors are seeded random unit float32 vectors of dimension
  384: embedding 100k texts with the local model would take hours on this machine, and exact
  search costs the same for any vectors. The queries are SciFact claims, their vectors random too.
- bench/.data/venv313: Python 3.13 (pyenv) with the chat Lambda's dependencies,
  `pip install -e .[chat,aws]`.

Budgets; the script exits 1 when one fails (and prints a profile of what failed):
- hybrid_search (top_k=5, the product's default candidates and fusion) p50 and p95 within 3x
  of exact vector search alone for as many candidates, same queries in the same run, the query
  vector precomputed on both sides;
- the cold start docchat adds to a bare FastAPI app on Python 3.13, a fresh process doing
  `from docchat.wiring.cloud import cloud_app; cloud_app()` against
  `import fastapi; fastapi.FastAPI()`, median of 7: under 0.5 s.
The server's own overhead to the first SSE byte of POST /chat (a model that answers at once) has
no stated number: it is reported next to a bare FastAPI streaming endpoint, and flagged (without
failing) when its p50 is above 50 ms.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import platform
import pstats
import random
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import uvicorn
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.backend import ChatBackend
from docchat.config import Settings
from docchat.llm import Message, ModelEvent, TextDelta, ToolSpec, TurnEnd
from docchat.models import Chunk, DocumentRecord
from docchat.ports import Vectors
from docchat.processes import ChatSettings
from docchat.search.hybrid import hybrid_search
from docchat.search.library import Library
from docchat.serve.app import create_app
from docchat.wiring import agent_config
from index_data import read_jsonl, sentence_parts
from report import table

# What the product does by default (docchat/config.py), so the table measures that.
DEFAULTS = Settings.from_env({})
SEARCH: dict[str, Any] = {
    "candidates": DEFAULTS.candidates,
    "fusion": DEFAULTS.fusion,
    "vector_weight": DEFAULTS.vector_weight,
}

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / ".data"
SCIFACT = ROOT.parent / "shared" / "data" / "beir-scifact"
CHUNKS = 100_000
PER_DOC = 50
DIMENSION = 384
SEED = 2026
MODEL_ID = "bench-random-unit-384"
INDEX_FORMAT = "2"  # bump when the way the index is built changes
RATIO_BUDGET = 3.0
SSE_FLAG_MS = 50.0
COLD_START_BUDGET_S = 0.5
WARMUP = 10
PROFILED = 20  # queries profiled when hybrid search is over budget
COLD_CODE = {
    "pass": "pass",
    "fastapi": "import fastapi; fastapi.FastAPI()",
    "docchat": "from docchat.wiring.cloud import cloud_app; cloud_app()",
}
# The settings the chat function requires to start (taken from docchat.processes, so a new one
# cannot stop the cold start); building the app makes no request to any of them.
CHAT_FUNCTION_ENV = {
    f"DOCCHAT_{name.upper()}": "https://127.0.0.1:9" if name == "opensearch_endpoint" else name
    for name in ChatSettings.required()
}


def log(message: str) -> None:
    """Progress on stderr; stdout carries only the table."""
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Row:
    measurement: str
    value: str
    p95: str = "-"
    baseline: str = "-"
    delta: str = "-"
    budget: str = "-"
    result: str = "info"


HEADER = Row("measurement", "p50/value", "p95", "baseline", "ratio/delta", "budget", "result")


# --- the corpus --------------------------------------------------------------------------------


def _generated(rng: random.Random, count: int, words: int) -> list[str]:
    """Zipf-like pseudo-text, for when the SciFact files are not there."""
    vocabulary = [f"w{n}" for n in range(20_000)]
    weights = [1 / (n + 1) for n in range(len(vocabulary))]
    return [" ".join(rng.choices(vocabulary, weights, k=words)) for _ in range(count)]


def corpus() -> tuple[str, list[tuple[str, str]], list[str]]:
    """Where the text comes from, (abstract title, chunk text) pairs, and query texts."""
    if (SCIFACT / "corpus.jsonl").is_file() and (SCIFACT / "queries.jsonl").is_file():
        pieces = [
            (doc["title"], part)
            for doc in read_jsonl(SCIFACT / "corpus.jsonl")
            for part in sentence_parts(doc["text"])
            if part
        ]
        queries = [q["text"] for q in read_jsonl(SCIFACT / "queries.jsonl")]
        return f"SciFact ({SCIFACT})", pieces, queries
    log(f"{SCIFACT} not found: falling back to generated text")
    rng = random.Random(SEED)
    texts = _generated(rng, 15_000, 70)
    return "generated text", [(t[:60], t) for t in texts], _generated(rng, 1_000, 10)


# --- the 100k index ----------------------------------------------------------------------------


def unit_vectors(rng: np.random.Generator, count: int) -> Vectors:
    vectors = rng.standard_normal((count, DIMENSION), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def _documents(pieces: Sequence[tuple[str, str]]) -> Iterator[tuple[DocumentRecord, list[Chunk]]]:
    """CHUNKS chunks, PER_DOC per document, cycling over `pieces` under distinct ids."""
    for doc_number in range(CHUNKS // PER_DOC):
        doc_id = f"doc{doc_number:05d}"
        title = f"SciFact abstracts, part {doc_number + 1}"
        chunks = []
        for position in range(PER_DOC):
            n = doc_number * PER_DOC + position
            heading, text = pieces[n % len(pieces)]
            page = position // 3 + 1
            chunks.append(
                Chunk(
                    chunk_id=f"{doc_id}-c{position:02d}",
                    doc_id=doc_id,
                    version="v1",
                    source=f"bench/{doc_id}.pdf",
                    title=title,
                    headings=[heading],
                    page_start=page,
                    page_end=page,
                    text=text,
                    embedding_model=MODEL_ID,
                )
            )
        record = DocumentRecord(
            doc_id=doc_id, source=f"bench/{doc_id}.pdf", title=title, version="v1", pages=17
        )
        yield record, chunks


def big_index(source: str, pieces: Sequence[tuple[str, str]]) -> SqliteIndex:
    """The cached 100k-chunk index, built first (into a temporary folder, then renamed)."""
    folder = DATA / "index-100k"
    stamp = {"format": INDEX_FORMAT, "chunks": CHUNKS, "seed": SEED, "source": source}
    stamp_file = folder / "stamp.json"
    if stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp:
        return SqliteIndex(folder / "index.sqlite", embedding_model=MODEL_ID, dimension=DIMENSION)
    log(f"building the {CHUNKS:,}-chunk index in {folder} (once) ...")
    started = time.perf_counter()
    building = DATA / "index-100k.building"
    shutil.rmtree(building, ignore_errors=True)
    index = SqliteIndex(building / "index.sqlite", embedding_model=MODEL_ID, dimension=DIMENSION)
    rng = np.random.default_rng(SEED)
    for record, chunks in _documents(pieces):
        index.replace_document(record, chunks, unit_vectors(rng, len(chunks)))
    index.close()
    (building / "stamp.json").write_text(json.dumps(stamp))
    shutil.rmtree(folder, ignore_errors=True)
    building.rename(folder)
    log(f"  built in {time.perf_counter() - started:.0f} s")
    return SqliteIndex(folder / "index.sqlite", embedding_model=MODEL_ID, dimension=DIMENSION)


class FixedEmbedder:
    """Returns the precomputed vector of a known query at once, so no embedding is timed."""

    model_id = MODEL_ID
    dimension = DIMENSION

    def __init__(self, vectors: dict[str, Vectors]) -> None:
        self.vectors = vectors

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> Vectors:
        return np.stack([self.vectors[t] for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return self.vectors[text]


# --- 1. retrieval ------------------------------------------------------------------------------


def _ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def _p50_p95(values: Sequence[float]) -> tuple[float, float]:
    p50, p95 = np.percentile(values, [50, 95])
    return float(p50), float(p95)


def retrieval_times(
    index: SqliteIndex, embedder: FixedEmbedder, queries: Sequence[str]
) -> dict[str, list[float]]:
    """Milliseconds per query of both searches, taking turns at going first."""
    sides: dict[str, Callable[[str], object]] = {
        "vector": lambda q: index.vector_search(embedder.vectors[q], k=DEFAULTS.candidates),
        "hybrid": lambda q: hybrid_search(index, embedder, q, top_k=5, **SEARCH),
    }
    for query in queries[:WARMUP]:
        for side in sides.values():
            side(query)
    times: dict[str, list[float]] = {name: [] for name in sides}
    for i, query in enumerate(queries):
        for name in list(sides)[:: 1 if i % 2 else -1]:
            times[name].append(_ms(lambda: sides[name](query)))  # noqa: B023 - called at once
    return times


def retrieval_rows(times: dict[str, list[float]]) -> tuple[list[Row], bool]:
    vector, hybrid = _p50_p95(times["vector"]), _p50_p95(times["hybrid"])
    ratios = (hybrid[0] / vector[0], hybrid[1] / vector[1])
    passed = max(ratios) <= RATIO_BUDGET
    rows = [
        Row(
            f"exact vector_search k={DEFAULTS.candidates} (numpy)",
            f"{vector[0]:.1f} ms",
            f"{vector[1]:.1f} ms",
        ),
        Row(
            f"hybrid_search top_k=5 candidates={DEFAULTS.candidates} {DEFAULTS.fusion}",
            f"{hybrid[0]:.1f} ms",
            f"{hybrid[1]:.1f} ms",
            f"vector {vector[0]:.1f} / {vector[1]:.1f} ms",
            f"{ratios[0]:.2f}x / {ratios[1]:.2f}x",
            f"<= {RATIO_BUDGET:g}x (p50, p95)",
            "PASS" if passed else "FAIL",
        ),
    ]
    return rows, passed


def hybrid_profile(index: SqliteIndex, embedder: FixedEmbedder, queries: Sequence[str]) -> str:
    """cProfile of hybrid_search over `queries`: each search's share, then the top 15."""
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        hybrid_search(index, embedder, query, top_k=5, **SEARCH)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    cumulative = {func: row[3] for (_, _, func), row in stats.stats.items()}  # type: ignore[attr-defined]
    total = cumulative["hybrid_search"]
    shares = ", ".join(
        f"{name} {cumulative.get(name, 0.0) / total:.0%}"
        for name in ("keyword_search", "vector_search", "chunks")
    )
    out.write(f"{len(queries)} queries, {total / len(queries) * 1000:.0f} ms each; {shares}\n")
    stats.sort_stats("cumulative").print_stats(15)
    return out.getvalue()


# --- 2. server overhead to the first SSE byte --------------------------------------------------


class InstantModel:
    """A model that answers "ok" at once, without calling a tool."""

    model_id = "bench-instant"

    def stream(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> Iterator[ModelEvent]:
        yield TextDelta("ok")
        yield TurnEnd("end_turn")


class BareRequest(BaseModel):
    messages: list[dict[str, str]]


def bare_app() -> FastAPI:
    """The floor: FastAPI parsing a body and streaming two SSE events from a sync endpoint."""
    app = FastAPI()

    def events() -> Iterator[str]:
        yield 'event: status\ndata: {"stage": "started"}\n\n'
        yield 'event: delta\ndata: {"text": "ok"}\n\n'

    @app.post("/chat")
    def chat(request: BareRequest) -> StreamingResponse:
        return StreamingResponse(events(), media_type="text/event-stream")

    return app


class Server:
    """uvicorn on a free 127.0.0.1 port in a daemon thread, as tests/api/test_server.py runs it."""

    def __init__(self, app: FastAPI) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/chat"

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start within 10 s")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def small_backend(folder: Path, pieces: Sequence[tuple[str, str]]) -> ChatBackend:
    index = SqliteIndex(folder / "small.sqlite", embedding_model=MODEL_ID, dimension=DIMENSION)
    record, chunks = next(_documents(pieces))
    index.replace_document(record, chunks, unit_vectors(np.random.default_rng(SEED), PER_DOC))
    embedder = FixedEmbedder({})
    library = Library(index=index, embedder=embedder, registry=index, **SEARCH)
    return ChatBackend(
        library=library, model=InstantModel(), config=agent_config(DEFAULTS, index_sleeps=True)
    )


def first_bytes(client: httpx.Client, url: str, question: str) -> tuple[float, float]:
    """Milliseconds from sending the POST to the first body byte, and to the first delta."""
    body = {"messages": [{"role": "user", "content": question}]}
    start = time.perf_counter()
    first = delta = 0.0
    seen = b""
    with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        for chunk in response.iter_raw():
            now = time.perf_counter()
            first = first or now
            seen += chunk
            if not delta and b"event: delta" in seen:
                delta = now
    if not delta:
        raise RuntimeError(f"no delta event from {url}: {seen[:300]!r}")
    return (first - start) * 1000, (delta - start) * 1000


def server_times(
    pieces: Sequence[tuple[str, str]], questions: Sequence[str]
) -> dict[str, list[float]]:
    """First-byte and first-delta times of docchat's /chat and the bare app, taking turns."""
    keys = ("docchat", "docchat-delta", "bare", "bare-delta")
    times: dict[str, list[float]] = {key: [] for key in keys}
    with tempfile.TemporaryDirectory() as folder:
        backend = small_backend(Path(folder), pieces)
        apps = {"docchat": create_app(lambda: backend), "bare": bare_app()}
        with Server(apps["docchat"]) as ours, Server(apps["bare"]) as bare:
            urls = {"docchat": ours.url, "bare": bare.url}
            with httpx.Client(timeout=10) as client:
                for question in questions[:WARMUP]:
                    for url in urls.values():
                        first_bytes(client, url, question)
                for i, question in enumerate(questions):
                    for name in list(urls)[:: 1 if i % 2 else -1]:
                        first, delta = first_bytes(client, urls[name], question)
                        times[name].append(first)
                        times[f"{name}-delta"].append(delta)
    return times


def server_rows(times: dict[str, list[float]]) -> list[Row]:
    rows = []
    for label, key in (("first body byte", ""), ("first delta event", "-delta")):
        ours, bare = _p50_p95(times["docchat" + key]), _p50_p95(times["bare" + key])
        flagged = ours[0] > SSE_FLAG_MS
        rows.append(
            Row(
                f"POST /chat -> {label}",
                f"{ours[0]:.1f} ms",
                f"{ours[1]:.1f} ms",
                f"bare FastAPI {bare[0]:.1f} / {bare[1]:.1f} ms",
                f"+{ours[0] - bare[0]:.1f} / +{ours[1] - bare[1]:.1f} ms",
                f"none; flag p50 > {SSE_FLAG_MS:g} ms",
                "FLAG" if flagged else "ok",
            )
        )
    return rows


# --- 3. cold start on Python 3.13 --------------------------------------------------------------


def python313() -> Path | None:
    """pyenv's newest 3.13, else python3.13 on PATH."""
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        found = sorted(Path(root, "versions").glob("3.13.*/bin/python3"))
        if found:
            return found[-1]
    on_path = shutil.which("python3.13")
    return Path(on_path) if on_path else None


def venv313() -> Path | None:
    """bench/.data/venv313 with docchat[chat,aws] installed; reinstalled when pyproject changes."""
    base = python313()
    if base is None:
        log("Python 3.13 not found (pyenv or python3.13 on PATH): skipping the cold-start part")
        return None
    venv = DATA / "venv313"
    python = venv / "bin" / "python"
    stamp = venv / ".bench-stamp"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if python.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return python
    log(f"installing docchat[chat,aws] into {venv} (once) ...")
    try:
        if not python.exists():
            subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run(
            [*pip, "-e", f"{ROOT}[chat,aws]"], check=True, capture_output=True, text=True
        )
    except subprocess.CalledProcessError as exc:
        log(f"could not set up {venv} ({exc}): skipping the cold-start part\n{exc.stderr}")
        return None
    stamp.write_text(wanted)
    return python


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def cold_starts(python: Path, runs: int) -> dict[str, list[float]]:
    """Wall seconds of fresh processes running each snippet, the snippets taking turns."""
    env = {**_clean_env(), **CHAT_FUNCTION_ENV}
    times: dict[str, list[float]] = {name: [] for name in COLD_CODE}
    for code in COLD_CODE.values():  # writes the .pyc files, as a deployed package has them
        subprocess.run([str(python), "-c", code], check=True, env=env, cwd=DATA)
    for _ in range(runs):
        for name, code in COLD_CODE.items():
            start = time.perf_counter()
            subprocess.run([str(python), "-c", code], check=True, env=env, cwd=DATA)
            times[name].append(time.perf_counter() - start)
    return times


def cold_rows(times: dict[str, list[float]]) -> tuple[list[Row], bool]:
    median = {name: statistics.median(t) for name, t in times.items()}
    best = {name: min(t) for name, t in times.items()}
    runs = len(times["pass"])

    def shown(name: str) -> str:
        return f"{median[name] * 1000:.0f} ms (best {best[name] * 1000:.0f})"

    added, added_best = median["docchat"] - median["fastapi"], best["docchat"] - best["fastapi"]
    passed = added < COLD_START_BUDGET_S
    rows = [
        Row(f"cold start py3.13: python -c pass, median of {runs}", shown("pass")),
        Row(
            "cold start py3.13: bare fastapi.FastAPI()",
            shown("fastapi"),
            baseline=f"floor {median['pass'] * 1000:.0f} ms",
            delta=f"+{(median['fastapi'] - median['pass']) * 1000:.0f} ms",
        ),
        Row(
            "cold start py3.13: docchat cloud_app()",
            shown("docchat"),
            baseline=f"fastapi {median['fastapi'] * 1000:.0f} ms",
            delta=f"+{added * 1000:.0f} ms (best +{added_best * 1000:.0f})",
            budget=f"< +{COLD_START_BUDGET_S * 1000:.0f} ms",
            result="PASS" if passed else "FAIL",
        ),
    ]
    return rows, passed


def top_imports(python: Path, code: str, count: int = 15) -> str:
    """`python -X importtime`: the `count` imports with the largest cumulative time."""
    result = subprocess.run(
        [str(python), "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        env={**_clean_env(), **CHAT_FUNCTION_ENV},
        cwd=DATA,
        check=True,
    )
    entries = []
    for line in result.stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) == 3 and fields[0].strip().isdigit():
            entries.append((int(fields[1]), int(fields[0]), fields[2].strip()))
    entries.sort(reverse=True)
    lines = [f"{'cumulative ms':>13} {'self ms':>8}  module"]
    lines += [f"{c / 1000:>13.1f} {s / 1000:>8.1f}  {name}" for c, s, name in entries[:count]]
    return "\n".join(lines)


def python_version(python: Path) -> str:
    result = subprocess.run(
        [str(python), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


# --- the table ---------------------------------------------------------------------------------


def main() -> int:
    # The chat API logs each request as JSON on stdout; here stdout carries only the table.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    parser = argparse.ArgumentParser(description="docchat chat-path budgets")
    parser.add_argument("--queries", type=int, default=200, help="retrieval queries to time")
    parser.add_argument("--requests", type=int, default=200, help="POST /chat requests to time")
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per cold-start case")
    args = parser.parse_args()
    started = time.perf_counter()
    DATA.mkdir(parents=True, exist_ok=True)

    source, pieces, all_queries = corpus()
    kind = "SciFact" if source.startswith("SciFact") else "generated"
    queries = random.Random(SEED).sample(all_queries, min(args.queries, len(all_queries)))
    query_vectors = unit_vectors(np.random.default_rng(SEED + 1), len(queries))
    embedder = FixedEmbedder(dict(zip(queries, query_vectors, strict=True)))
    index = big_index(source, pieces)
    python = venv313()

    log(f"timing {len(queries)} queries ...")
    # The first search after opening reads every chunk's vector and terms into numpy.
    load_ms = _ms(lambda: hybrid_search(index, embedder, queries[0], top_k=5, **SEARCH))
    times = retrieval_times(index, embedder, queries)
    rows, retrieval_ok = retrieval_rows(times)
    rows.append(Row("first search after opening (loads the index)", f"{load_ms:.0f} ms"))
    profile = "" if retrieval_ok else hybrid_profile(index, embedder, queries[:PROFILED])
    log(f"timing {args.requests} requests per server ...")
    questions = [all_queries[i % len(all_queries)] for i in range(args.requests)]
    rows += server_rows(server_times(pieces, questions))
    cold_ok, imports, version313 = True, "", "absent (part skipped)"
    if python is not None:
        log(f"timing {args.runs} cold starts of each case ...")
        cold, cold_ok = cold_rows(cold_starts(python, args.runs))
        rows += cold
        version313 = python_version(python)
        if not cold_ok:
            imports = top_imports(python, COLD_CODE["docchat"])
    else:
        rows.append(Row("cold start py3.13", "skipped: no Python 3.13", result="SKIP"))

    print(
        f"Python {platform.python_version()} (retrieval, server), {version313} (cold start); "
        f"SQLite {sqlite3.sqlite_version}, numpy {np.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    print(
        f"Index: {index.count():,} chunks in {len(index.documents()):,} documents of {source} "
        f"text; vectors: seeded random unit float32, dim {DIMENSION} (not embeddings); "
        f"{len(queries)} {kind} queries, query vectors precomputed (no embedding timed)"
    )
    print(table(HEADER, rows))
    if profile:
        print("\nhybrid_search over budget; cProfile, top 15 by cumulative time:\n" + profile)
    if imports:
        print("\ncold start over budget; python -X importtime, top 15 cumulative:\n" + imports)
    passed = retrieval_ok and cold_ok
    print(f"{'PASS' if passed else 'FAIL'} in {time.perf_counter() - started:.0f} s")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
