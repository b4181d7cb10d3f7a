"""docchat's embedded index against LanceDB, the embedded vector and full-text store people pick
for this (issue 45): the same texts and vectors in both, measured in one run, docchat / LanceDB.

Run from the repository root with the benchmark's extra installed (`pip install -e '.[peers]'`;
the product never imports LanceDB):

    PYTHONPATH=layers/docchat:. .venv/bin/python bench/peers.py --chunks 10000   # quick
    PYTHONPATH=layers/docchat:. .venv/bin/python bench/peers.py                  # 100,000 chunks
    PYTHONPATH=layers/docchat:. .venv/bin/python bench/peers.py --json out.json  # and its JSON
    PYTHONPATH=layers/docchat:. .venv/bin/python bench/peers.py --chunks 1000000 --reuse

`--reuse` copies docchat's side from bench/index_data.py's build of the same documents (run
`bench/index_data.py 1m` first; over an hour here) instead of building it, so the build row
is not measured.

Data: bench/index_data.py's (SciFact text in documents of 10 chunks, 50 at 1M; seeded clustered
unit vectors of dimension 384; its queries, a SciFact claim each), both indexes built afresh under
bench/.data/peers-<chunks>/ in worker processes. docchat writes through
SqliteIndex.replace_document, a document at a time, and searches through hybrid_search (the
product's fusion, candidates and weight; top 5) and vector_search, as bench/index.py does.
LanceDB gets the rows as Arrow tables of up to 100,000 rows (its bulk path), a native FTS index
on each chunk's contextual text (`Chunk.embed_text`, what docchat's BM25 reads) and a vector
index (dot product; `--lance-index`); hybrid search asks as many candidates a side as docchat
(`limit`), fuses them with LanceDB's default (RRF) and keeps the top 5. The vector index's
search knob (IVF_FLAT's nprobes, IVF_HNSW_SQ's ef) starts at LanceDB's default and doubles until
recall@10 on 50 other queries is >= 0.98; the table says what it took.

Targets (the script exits 1 when one fails): docchat <= 1.0x LanceDB on every row (open + first
hybrid search in a fresh process, imports included; hybrid and vector search p50; a search right
after adding 20 chunks; build CPU; peak RSS of the fresh process), and recall@10 against an exact
numpy scan >= 0.98 on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import table

# LanceDB warns on stderr at every query whose columns leave out _distance or _score.
os.environ.setdefault("LANCEDB_LOG", "error")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / ".data"  # index_data.DATA (not imported here: see open_worker)
TOP_K, K, ADDED, RECALL = 5, 10, 20, 0.98
BATCH_ROWS = 100_000
FIELDS = ["chunk_id", "doc_id", "version", "source", "title", "headings", "page_start", "page_end"]
COLUMNS = [*FIELDS, "text"]  # what a hybrid search returns, as docchat's passages hold
# The vector index: its config class, its search knob and the knob's LanceDB default.
LANCE_INDEXES = {"ivf_flat": ("IvfFlat", "nprobes", 20), "ivf_hnsw_sq": ("HnswSq", "ef", 100)}
Vectors = np.ndarray


@dataclass(frozen=True)
class Row:
    measurement: str
    docchat: str
    lancedb: str = "-"
    ratio: str = "-"
    target: str = "-"
    result: str = "info"


HEADER = Row("measurement", "docchat", "LanceDB", "ratio", "target", "result")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def p50(values: Sequence[float]) -> float:
    return float(np.percentile(values, 50))


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def per_doc(chunks: int) -> int:
    return 50 if chunks >= 1_000_000 else 10  # as index_data.SPECS


def peak_rss() -> int:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) * 1024


# --- the data: bench/index_data.py's documents, and the same rows for LanceDB -----------------


def generated(chunks: int) -> Iterator[tuple[Any, list[Any], Vectors]]:
    """(record, chunks, vectors) of each document of an index of `chunks` chunks, as
    index_data.built writes them."""
    from index_data import Mixture, chunks_of, corpus

    _, pieces, _ = corpus()
    mixture, size = Mixture(), per_doc(chunks)
    for number in range(chunks // size):
        record, found = chunks_of(f"doc{number:06d}", pieces, number * size, size)
        yield record, found, mixture.document(number, size)


def arrow_rows(chunks: Sequence[Any], vectors: Vectors) -> Any:
    import pyarrow as pa

    from index_data import DIMENSION

    columns: dict[str, Any] = {f: [getattr(c, f) for c in chunks] for f in COLUMNS}
    columns["search_text"] = [c.embed_text for c in chunks]
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
    columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, DIMENSION)
    return pa.table(columns)


def docchat_path(folder: Path) -> Path:
    return folder / "docchat" / "index.sqlite3"


def open_docchat(folder: Path) -> Any:
    from docchat.adapters.sqlite_index import SqliteIndex
    from index_data import DIMENSION, MODEL_ID

    return SqliteIndex(docchat_path(folder), embedding_model=MODEL_ID, dimension=DIMENSION)


def open_lance(folder: Path) -> Any:
    import lancedb

    return lancedb.connect(str(folder / "lancedb")).open_table("chunks")


def lance_vector(table: Any, vector: Vectors, knobs: dict[str, int]) -> list[str]:
    query = table.search(vector, query_type="vector").distance_type("dot").limit(K)
    for knob, value in knobs.items():
        query = getattr(query, knob)(value)
    ids: list[str] = query.select(["chunk_id", "_distance"]).to_arrow()["chunk_id"].to_pylist()
    return ids


def lance_hybrid(
    table: Any, text: str, vector: Vectors, knobs: dict[str, int], candidates: int
) -> list[dict[str, Any]]:
    query = table.search(query_type="hybrid").vector(vector).text(text).distance_type("dot")
    for knob, value in knobs.items():
        query = getattr(query, knob)(value)
    found: list[dict[str, Any]] = (
        query.limit(candidates).select(COLUMNS).to_arrow().slice(0, TOP_K).to_pylist()
    )
    return found


# --- in worker processes: building, and opening + the first search -----------------------------


class Clock:
    """CPU (every thread of the process) and wall seconds spent inside `running`."""

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    @contextmanager
    def running(self) -> Iterator[None]:
        cpu, wall = time.process_time(), time.perf_counter()
        yield
        self.cpu += time.process_time() - cpu
        self.wall += time.perf_counter() - wall


def build_docchat(folder: Path, chunks: int) -> dict[str, Any]:
    """Every document through replace_document, then close (its last flush and merges); only
    those calls are timed, not making the chunks and vectors."""
    from docchat.adapters.sqlite_index import SqliteIndex  # noqa: F401  (imports: not timed)

    docchat_path(folder).parent.mkdir(parents=True)
    clock = Clock()
    with clock.running():
        index = open_docchat(folder)
    for record, found, vectors in generated(chunks):
        with clock.running():
            index.replace_document(record, found, vectors)
    with clock.running():
        index.close()
    return {"cpu_s": clock.cpu, "wall_s": clock.wall}


def copied_docchat(folder: Path, chunks: int) -> dict[str, Any]:
    """docchat's side copied from bench/index_data.py's build of the same documents (`--reuse`:
    a 1M build takes over an hour here); its build CPU is then not measured."""
    from index_data import SPECS, open_index

    (spec,) = (s for s in SPECS.values() if s.chunks == chunks and s.per_doc == per_doc(chunks))
    open_index(spec).close()  # refuses an index not built to the end
    target = docchat_path(folder)
    target.parent.mkdir(parents=True)
    shutil.copy2(spec.path, target)
    shutil.copytree(spec.path.with_suffix(".segments"), target.with_suffix(".segments"))
    return {"cpu_s": None, "wall_s": None, "copied_from": str(spec.path)}


def build_lance(folder: Path, chunks: int, kind: str) -> dict[str, Any]:
    """Arrow tables of up to BATCH_ROWS rows (create_table, then add), then the FTS index and
    the vector index; only LanceDB's calls are timed."""
    import lancedb
    import lancedb.index

    clock = Clock()
    with clock.running():
        db = lancedb.connect(str(folder / "lancedb"))
    table: Any = None
    pending: list[tuple[list[Any], Vectors]] = []

    def write() -> None:
        nonlocal table
        rows = arrow_rows([c for cs, _ in pending for c in cs], np.vstack([v for _, v in pending]))
        pending.clear()
        with clock.running():
            if table is None:
                table = db.create_table("chunks", rows)
            else:
                table.add(rows)

    for _, found, vectors in generated(chunks):
        pending.append((found, vectors))
        if sum(len(cs) for cs, _ in pending) >= BATCH_ROWS:
            write()
    if pending:
        write()
    with clock.running():
        table.create_index("search_text", config=lancedb.index.FTS())
        if kind in LANCE_INDEXES:
            config = getattr(lancedb.index, LANCE_INDEXES[kind][0])(distance_type="dot")
            table.create_index("vector", config=config)
    return {"cpu_s": clock.cpu, "wall_s": clock.wall}


def open_worker(side: str, folder: Path) -> dict[str, Any]:
    """Open one side's index and run one hybrid search, importing only what that side needs
    (timed from the parent's spawn to `done`: interpreter, imports, opening, the search)."""
    asked = json.loads((folder / "query.json").read_text())
    text, vector = asked["text"], np.asarray(asked["vector"], dtype=np.float32)
    if side == "docchat":
        from docchat.search.hybrid import hybrid_search
        from index_data import FixedEmbedder

        embedder = FixedEmbedder([(text, vector)])
        found: Sequence[object] = hybrid_search(
            open_docchat(folder), embedder, text, top_k=TOP_K, **asked["search"]
        )
    else:
        table = open_lance(folder)
        found = lance_hybrid(table, text, vector, asked["knobs"], asked["search"]["candidates"])
    done = time.monotonic()
    assert len(found) == TOP_K, f"{side} found {len(found)}"
    return {"done": done, "peak": peak_rss()}


def worker(*args: str) -> dict[str, Any]:
    """Run `bench/peers.py --worker ...` (at this process's niceness); the JSON it prints."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", *args]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"worker {args} failed:\n{done.stderr[-3000:]}")
    value: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if "done" in value:  # a fresh process: spawned to the first search's end
        value["ms"] = (value["done"] - started) * 1000
    return value


# --- in this process ---------------------------------------------------------------------------


def exact_tops(chunks: int, vectors: Sequence[Vectors]) -> list[set[str]]:
    """The true top K chunk ids of each query vector: a numpy scan of every stored vector."""
    ids: list[str] = []
    parts: list[Vectors] = []
    for _, found, stored in generated(chunks):
        ids += [c.chunk_id for c in found]
        parts.append(stored)
    matrix, names = np.concatenate(parts), np.asarray(ids)
    tops = []
    for vector in vectors:
        scores = matrix @ vector
        tops.append(set(names[np.argpartition(-scores, K)[:K]].tolist()))
    return tops


def recall(found: Sequence[Sequence[str]], expected: Sequence[set[str]]) -> float:
    return statistics.mean(len(set(f) & e) / K for f, e in zip(found, expected, strict=True))


def tuned(table: Any, kind: str, vectors: Sequence[Vectors], expected: Sequence[set[str]]) -> Any:
    """The vector index's knob: its LanceDB default, doubled until recall@10 >= RECALL."""
    if kind not in LANCE_INDEXES:
        return {}, recall([lance_vector(table, v, {}) for v in vectors], expected)
    _, knob, value = LANCE_INDEXES[kind]
    while True:
        got = recall([lance_vector(table, v, {knob: value}) for v in vectors], expected)
        log(f"  LanceDB {kind} {knob}={value}: recall@10 {got:.4f} on the tuning queries")
        if got >= RECALL or value >= 8192:
            return {knob: value}, got
        value *= 2


def interleaved(sides: dict[str, Callable[[int], object]], count: int) -> dict[str, list[float]]:
    """Milliseconds of each side's call for 0..count-1, taking turns at going first."""
    times: dict[str, list[float]] = {side: [] for side in sides}
    for n in range(count):
        for side in list(sides)[:: 1 if n % 2 else -1]:
            times[side].append(timed(partial(sides[side], n)))
    return times


def compared(label: str, values: dict[str, float], unit: str, fmt: str) -> Row:
    ratio = values["docchat"] / values["lancedb"]
    ours, theirs = (f"{values[side]:{fmt}} {unit}" for side in ("docchat", "lancedb"))
    return Row(label, ours, theirs, f"{ratio:.2f}x", "<= 1.0x", "PASS" if ratio <= 1.0 else "FAIL")


def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    from docchat.config import Settings
    from docchat.search.hybrid import hybrid_search
    from index_data import SEED, FixedEmbedder, Mixture, chunks_of, corpus, queries

    defaults = Settings.from_env({})
    search: dict[str, Any] = {"candidates": defaults.candidates, "fusion": defaults.fusion}
    search["vector_weight"] = defaults.vector_weight
    folder = DATA / f"peers-{args.chunks}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    log(f"building both indexes of {args.chunks:,} chunks in {folder} ...")
    builds = {
        "docchat": copied_docchat(folder, args.chunks)
        if args.reuse
        else worker("build", "docchat", str(folder), str(args.chunks), "-"),
        "lancedb": worker("build", "lancedb", str(folder), str(args.chunks), args.lance_index),
    }
    cpu = {s: b["cpu_s"] for s, b in builds.items()}
    log(", ".join(f"{s} {'copied' if v is None else f'{v:.1f} s CPU'}" for s, v in cpu.items()))
    _, pieces, texts = corpus()
    asked = queries(args.queries, texts)
    tuning = list(Mixture().draw(np.random.default_rng([SEED, 2]), 50))
    expected = exact_tops(args.chunks, [v for _, v in asked] + tuning)
    table = open_lance(folder)
    knobs, tuning_recall = tuned(table, args.lance_index, tuning, expected[len(asked) :])
    expected = expected[: len(asked)]
    (folder / "query.json").write_text(
        json.dumps(
            {"text": asked[0][0], "vector": asked[0][1].tolist(), "search": search, "knobs": knobs}
        )
    )

    log(f"fresh processes, {args.opens} each ...")
    opened: dict[str, list[dict[str, Any]]] = {"docchat": [], "lancedb": []}
    for n in range(args.opens):
        for side in list(opened)[:: 1 if n % 2 else -1]:
            opened[side].append(worker("open", side, str(folder)))

    def median(side: str, key: str) -> float:
        return float(statistics.median(o[key] for o in opened[side]))

    log(f"searches, {len(asked)} queries ...")
    index = open_docchat(folder)
    embedder = FixedEmbedder(asked)
    hybrid: dict[str, Callable[[int], object]] = {
        "docchat": lambda n: hybrid_search(index, embedder, asked[n][0], top_k=TOP_K, **search),
        "lancedb": lambda n: lance_hybrid(table, *asked[n], knobs, search["candidates"]),
    }
    found: dict[str, list[list[str]]] = {"docchat": [], "lancedb": []}
    vector: dict[str, Callable[[int], object]] = {
        "docchat": lambda n: found["docchat"].append(
            [c for c, _ in index.vector_search(asked[n][1], k=K)]
        ),
        "lancedb": lambda n: found["lancedb"].append(lance_vector(table, asked[n][1], knobs)),
    }
    for n in range(10):  # warm both up
        for call in (*hybrid.values(), *vector.values()):
            call(n)
    hybrid_ms = interleaved(hybrid, len(asked))
    del found["docchat"][:], found["lancedb"][:]
    vector_ms = interleaved(vector, len(asked))

    log(f"a search right after adding {ADDED} chunks, {args.rounds} rounds ...")
    mixture = Mixture()
    after: dict[str, list[float]] = {"docchat": [], "lancedb": []}

    def add(side: str, n: int) -> None:
        record, chunks = chunks_of(f"added{n:03d}", pieces, 7 * n, ADDED)
        vectors = mixture.document(10_000_000 + n, ADDED)
        if side == "docchat":
            index.replace_document(record, chunks, vectors)
        else:
            table.add(arrow_rows(chunks, vectors))

    for n in range(args.rounds):
        for side in list(after)[:: 1 if n % 2 else -1]:
            add(side, n)
            after[side].append(timed(partial(hybrid[side], n)))
    index.close()

    recalls = {side: recall(found[side], expected) for side in found}
    name, knob = args.lance_index.upper(), ", ".join(f"{k}={v}" for k, v in knobs.items())
    configured = (
        f"{name} (dot, LanceDB's default partitions), {knob}" if knobs else "no vector index"
    )
    config = {"chunks": args.chunks, "queries": len(asked), "search": search, "builds": builds}
    config |= {"lance_index": args.lance_index, "knobs": knobs, "tuning_recall": tuning_recall}
    budget = f">= {RECALL} both"
    both = min(recalls.values()) >= RECALL
    sides = ("docchat", "lancedb")
    measured = [
        (f"open + first hybrid search, fresh process (median of {args.opens})", "ms", ".0f",
         {s: median(s, "ms") for s in sides}),
        (f"hybrid search p50 (top {TOP_K} of {search['candidates']} a side)", "ms", ".2f",
         {s: p50(hybrid_ms[s]) for s in sides}),
        (f"vector search p50 (k={K})", "ms", ".2f", {s: p50(vector_ms[s]) for s in sides}),
        (f"hybrid search right after adding {ADDED} chunks (p50 of {args.rounds})", "ms", ".2f",
         {s: p50(after[s]) for s in sides}),
        ("peak RSS, fresh process after open + search (median)", "MiB", ".0f",
         {s: median(s, "peak") / 2**20 for s in sides}),
    ]  # fmt: skip
    rows = [compared(label, values, unit, fmt) for label, unit, fmt, values in measured]
    build = f"build: CPU to write {args.chunks:,} chunks"
    if builds["docchat"]["cpu_s"] is None:
        lance_cpu = f"{builds['lancedb']['cpu_s']:.1f} s"
        rows.insert(4, Row(build, "not measured (--reuse)", lance_cpu, result="not run"))
    else:
        rows.insert(4, compared(build, {s: builds[s]["cpu_s"] for s in sides}, "s", ".1f"))
    rows += [
        Row(
            f"recall@10 of vector search vs exact numpy scan ({len(asked)} queries)",
            f"{recalls['docchat']:.4f}",
            f"{recalls['lancedb']:.4f}",
            f"{recalls['docchat'] / recalls['lancedb']:.2f}x",
            budget,
            "PASS" if both else "FAIL",
        ),
        Row(
            "LanceDB vector index (knob tuned on 50 other queries)",
            "-",
            f"{configured}: recall {tuning_recall:.4f} there",
        ),
    ]
    return rows, config


def environment() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, numpy "
        f"{np.__version__}, lancedb {version('lancedb')}, pyarrow {version('pyarrow')}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000, help="10000, 100000 or 1000000")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10, help="20-chunk documents added")
    parser.add_argument("--opens", type=int, default=3, help="fresh processes per side")
    parser.add_argument(
        "--lance-index", default="ivf_flat", choices=[*LANCE_INDEXES, "none"], help="LanceDB's"
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="copy docchat's index from bench/index_data.py's build (build CPU not measured)",
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, side, folder, *rest = args.worker
        if kind == "open":
            result = open_worker(side, Path(folder))
        elif side == "docchat":
            result = build_docchat(Path(folder), int(rest[0]))
        else:
            result = build_lance(Path(folder), int(rest[0]), rest[1])
        print(json.dumps(result))
        return 0
    started = time.monotonic()
    rows, config = run(args)
    print(environment())
    print(
        f"{args.chunks:,} chunks of bench/index_data.py (SciFact text, clustered random unit "
        f"vectors of dimension 384), {config['queries']} queries; docchat: SqliteIndex, "
        "hybrid_search with the product's defaults; LanceDB: native FTS on the chunk's "
        f"contextual text, RRF hybrid; {time.monotonic() - started:.0f} s"
    )
    print(table(HEADER, rows))
    if args.json:
        report = {"environment": environment(), "config": config, "rows": [asdict(r) for r in rows]}
        args.json.write_text(json.dumps(report, indent=2))
    return 1 if any(r.result == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
