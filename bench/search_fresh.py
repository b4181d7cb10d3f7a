"""What a person waits for: a fresh `docchat search` at 1M chunks against the same at 10k (issue
45's restated index target: <= 1.2x, wall time, imports included).

Run from the repository root once bench/index_data.py has built both indexes (the 1M one takes
about half an hour here):

    PYTHONPATH=layers/docchat:. .venv/bin/python bench/index_data.py 10k 1m
    PYTHONPATH=layers/docchat:. .venv/bin/python bench/search_fresh.py [--runs 5] [--large 1m]

Each index is copied into a data directory of its own under bench/.data/search-<name>/ (once;
its meta then names the local embedder, whose vectors have the same dimension, so the command
opens it as its own: the stored vectors are index_data's seeded ones, not embeddings, which
changes what is found, not what it costs). The installed `docchat search QUERY --json
--data-dir DIR` is then run as a person runs it, the two sizes taking turns, each query a
SciFact claim never asked before in that directory; its wall time is the process's, from spawn
to exit: interpreter, imports, the embedder's model, opening the index, the search, the output.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index import HEADER, Row, judged
from index_data import DATA, SPECS, corpus
from report import table

ROOT = Path(__file__).resolve().parent.parent
DOCCHAT = ROOT / ".venv" / "bin" / "docchat"
TARGET = 1.2


def local_model() -> tuple[str, int]:
    """The local embedder's model id and dimension, as `docchat search` will open it."""
    from docchat.config import Settings
    from docchat.wiring.local import local_embedder

    embedder = local_embedder(Settings())
    return embedder.model_id, embedder.dimension


def data_dir(name: str, model: str) -> Path:
    """bench/.data/search-<name>/, holding a copy of index_data's index of `name` whose meta
    names `model`."""
    spec = SPECS[name]
    if not (spec.path.parent / "stamp.json").is_file():
        sys.exit(f"{spec.path} is not built: run bench/index_data.py {name}")
    folder = DATA / f"search-{name}"
    stamp = folder / "copied-from.txt"
    origin = (spec.path.parent / "stamp.json").read_text() + model
    if stamp.is_file() and stamp.read_text() == origin:
        forget_sentences(folder)
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy2(spec.path, folder / "index.sqlite3")
    segments = spec.path.with_suffix(".segments")
    shutil.copytree(segments, folder / "index.segments")
    db = sqlite3.connect(folder / "index.sqlite3")
    with db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'embedding_model'", (model,))
    db.close()
    stamp.write_text(origin)
    return folder


def forget_sentences(folder: Path) -> None:
    """Drop the sentence vectors earlier runs kept (the reranker keeps those of each passage a
    question reranks), so every run starts from the index as built: kept, they made the small
    index's later questions cheaper than the large one's (its passages recur more often)."""
    db = sqlite3.connect(folder / "index.sqlite3")
    with db:
        db.execute("DELETE FROM sentences")
    db.close()


def searched(folder: Path, query: str) -> float:
    """Wall seconds of one `docchat search` process."""
    command = [str(DOCCHAT), "search", query, "--json", "--data-dir", str(folder)]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    wall = time.perf_counter() - started
    if result.returncode != 0 or not result.stdout.lstrip().startswith("["):
        sys.exit(f"`{' '.join(command)}` failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per size")
    parser.add_argument("--small", default="10k", choices=list(SPECS))
    parser.add_argument("--large", default="1m", choices=list(SPECS))
    args = parser.parse_args()
    model, dimension = local_model()
    if dimension != 384:
        sys.exit(f"the local embedder's vectors have {dimension} dimensions; the indexes 384")
    folders = {name: data_dir(name, model) for name in (args.small, args.large)}
    _, _, claims = corpus()
    questions = iter(claims)
    for folder in folders.values():  # the first run of each reads the files into the page cache
        searched(folder, next(questions))
    walls: dict[str, list[float]] = {name: [] for name in folders}
    for _ in range(args.runs):
        for name, folder in folders.items():
            walls[name].append(searched(folder, next(questions)))
    small, large = (statistics.median(walls[n]) for n in (args.small, args.large))
    ratio = large / small
    rows = [
        Row(
            f"fresh `docchat search`, {SPECS[args.large].chunks:,} chunks (median of {args.runs})",
            f"{large * 1000:.0f} ms",
            f"{SPECS[args.small].chunks:,}: {small * 1000:.0f} ms",
            f"{ratio:.2f}x",
            f"<= {TARGET}x",
            judged(ratio, TARGET),
        ),
        *(
            Row(f"  each run, {name}", " ".join(f"{w * 1000:.0f}" for w in walls[name]) + " ms")
            for name in folders
        ),
    ]
    print(f"Python {sys.version.split()[0]}, model {model}, wall time from spawn to exit")
    print(table(HEADER, rows))
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
