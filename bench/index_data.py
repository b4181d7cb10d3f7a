"""The indexes bench/index.py measures, built once under bench/.data/ through SqliteIndex's own
writes (replace_document, one document at a time), and the queries it asks them.

Text: SciFact abstracts (../shared/data/beir-scifact) cut into ~3 pieces each and repeated under
distinct ids (generated words if the folder is absent), so BM25 works on real text. Vectors:
seeded, clustered unit vectors of dimension 384, not embeddings (embedding a million texts here
would take days): 2,000 topics of 32 subtopics each; a document's chunks share a topic, as a
document's do. Queries are drawn from the same mixture (never a stored vector), each with a
SciFact claim as its text.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.models import Chunk, DocumentRecord
from docchat.ports import Vectors

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / ".data"
SCIFACT = ROOT.parent / "shared" / "data" / "beir-scifact"
DIMENSION = 384
MODEL_ID = "bench-clustered-384"
SEED = 2026
TOPICS, SUBTOPICS = 2_000, 32
SUBTOPIC_WEIGHT, NOISE = 0.7, 0.035
FORMAT = "1"  # bump when what is built changes


@dataclass(frozen=True)
class Spec:
    """An index to build: `chunks` chunks in documents of `per_doc`."""

    name: str
    chunks: int
    per_doc: int

    @property
    def documents(self) -> int:
        return self.chunks // self.per_doc

    @property
    def path(self) -> Path:
        return DATA / f"index-{self.name}" / "index.sqlite3"


SPECS = {
    spec.name: spec
    for spec in (
        Spec("10k", 10_000, 10),
        Spec("100k", 100_000, 10),  # 10,000 documents: the Library target's size
        Spec("1m", 1_000_000, 50),
        # What a 1M build reached on the loaded 2-core machine in the time there was (issue 30's
        # run): the same documents as the first 387,300 chunks of "1m".
        Spec("387k", 387_300, 50),
    )
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- text and vectors ----------------------------------------------------------------------


def read_jsonl(path: Path) -> Iterator[dict[str, str]]:
    """The objects of a JSON Lines file (bench/chat.py reads SciFact with it too)."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def sentence_parts(text: str, count: int = 3) -> list[str]:
    """`text` cut at sentence ends into up to `count` pieces of similar length."""
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    target = len(text) / count
    parts: list[str] = []
    current: list[str] = []
    for sentence in sentences:
        current.append(sentence)
        if sum(map(len, current)) >= target and len(parts) < count - 1:
            parts.append(" ".join(current))
            current = []
    if current:
        parts.append(" ".join(current))
    return parts


def corpus() -> tuple[str, list[tuple[str, str]], list[str]]:
    """Where the text comes from, (abstract title, piece of text) pairs, and query texts."""
    if (SCIFACT / "corpus.jsonl").is_file() and (SCIFACT / "queries.jsonl").is_file():
        pieces = [
            (doc["title"], part)
            for doc in read_jsonl(SCIFACT / "corpus.jsonl")
            for part in sentence_parts(doc["text"])
            if part
        ]
        return "SciFact", pieces, [q["text"] for q in read_jsonl(SCIFACT / "queries.jsonl")]
    log(f"{SCIFACT} not found: generated text instead")
    rng = random.Random(SEED)
    words = [f"w{n}" for n in range(20_000)]
    weights = [1 / (n + 1) for n in range(len(words))]

    def text(count: int) -> str:
        return " ".join(rng.choices(words, weights, k=count))

    return (
        "generated text",
        [(text(6), text(70)) for _ in range(15_000)],
        [text(10) for _ in range(1_000)],
    )


class Mixture:
    """The clustered vectors: topic + SUBTOPIC_WEIGHT x subtopic + noise, unit length."""

    def __init__(self) -> None:
        rng = np.random.default_rng(SEED)
        self.topics = _unit(rng.standard_normal((TOPICS, DIMENSION), dtype=np.float32))
        self.subtopics = _unit(
            rng.standard_normal((TOPICS, SUBTOPICS, DIMENSION), dtype=np.float32)
        )

    def draw(self, rng: np.random.Generator, count: int, topic: int | None = None) -> Vectors:
        topics = rng.integers(0, TOPICS, count) if topic is None else np.full(count, topic)
        subtopics = rng.integers(0, SUBTOPICS, count)
        noise = rng.standard_normal((count, DIMENSION), dtype=np.float32) * NOISE
        mixed = self.topics[topics] + SUBTOPIC_WEIGHT * self.subtopics[topics, subtopics] + noise
        return _unit(mixed.astype(np.float32))

    def document(self, number: int, count: int) -> Vectors:
        """The vectors of document `number`'s chunks: one topic, any of its subtopics."""
        rng = np.random.default_rng([SEED, number])
        return self.draw(rng, count, topic=int(rng.integers(0, TOPICS)))


def _unit(vectors: Vectors) -> Vectors:
    unit: Vectors = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    return unit


def queries(count: int, texts: Sequence[str]) -> list[tuple[str, Vectors]]:
    """`count` queries: a SciFact claim each, with a vector drawn from the mixture."""
    rng = np.random.default_rng([SEED, 1])
    vectors = Mixture().draw(rng, count)
    return [(texts[n % len(texts)], vectors[n]) for n in range(count)]


# --- documents and indexes -----------------------------------------------------------------


def chunks_of(
    doc_id: str, pieces: Sequence[tuple[str, str]], first: int, count: int, *, version: str = "v1"
) -> tuple[DocumentRecord, list[Chunk]]:
    """A document of `count` chunks with the texts of pieces[first:], cycling."""
    title = f"SciFact abstracts, part {doc_id}"
    source = f"bench/{doc_id}.pdf"
    chunks = []
    for position in range(count):
        heading, text = pieces[(first + position) % len(pieces)]
        page = position // 3 + 1
        chunks.append(
            Chunk(
                chunk_id=f"{doc_id}:{version}:{position:05d}",
                doc_id=doc_id,
                version=version,
                source=source,
                title=title,
                headings=[heading],
                page_start=page,
                page_end=page,
                text=text,
                embedding_model=MODEL_ID,
            )
        )
    record = DocumentRecord(
        doc_id=doc_id, source=source, title=title, version=version, pages=count // 3 + 1
    )
    return record, chunks


def built(spec: Spec, source: str, pieces: Sequence[tuple[str, str]]) -> Path:
    """The index of `spec`, built first if it is not there (into a folder renamed when done)."""
    folder = spec.path.parent
    stamp = {"format": FORMAT, "chunks": spec.chunks, "per_doc": spec.per_doc, "source": source}
    stamp_file = folder / "stamp.json"
    if stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp:
        return spec.path
    building = folder.with_name(folder.name + ".building")
    partial = building / "stamp.partial.json"
    if not (partial.is_file() and json.loads(partial.read_text()) == stamp):
        shutil.rmtree(building, ignore_errors=True)  # a build of something else: start again
    building.mkdir(parents=True, exist_ok=True)
    partial.write_text(json.dumps(stamp))
    log(f"building the {spec.chunks:,}-chunk index in {folder} (once) ...")
    started = time.perf_counter()
    index = SqliteIndex(building / spec.path.name, embedding_model=MODEL_ID, dimension=DIMENSION)
    done = len(index.documents())  # an interrupted build goes on where it stopped
    mixture = Mixture()
    for number in range(done, spec.documents):
        record, chunks = chunks_of(f"doc{number:06d}", pieces, number * spec.per_doc, spec.per_doc)
        index.replace_document(record, chunks, mixture.document(number, spec.per_doc))
        if (number + 1) % max(1, spec.documents // 20) == 0:
            done = (number + 1) * spec.per_doc
            log(f"  {done:,} chunks, {time.perf_counter() - started:.0f} s")
    index.close()
    partial.unlink()
    (building / "stamp.json").write_text(json.dumps(stamp))
    shutil.rmtree(folder, ignore_errors=True)
    building.rename(folder)
    log(f"  built in {time.perf_counter() - started:.0f} s")
    return spec.path


def open_index(spec: Spec) -> SqliteIndex:
    """The index of `spec`, which must have been built: opening a missing one would make an
    empty index and measure nothing."""
    if not (spec.path.parent / "stamp.json").is_file():
        raise FileNotFoundError(f"{spec.path} is not built: run bench/index_data.py {spec.name}")
    return SqliteIndex(spec.path, embedding_model=MODEL_ID, dimension=DIMENSION)


class FixedEmbedder:
    """Returns each known query's vector at once, so no embedding is timed."""

    model_id = MODEL_ID
    dimension = DIMENSION

    def __init__(self, known: Sequence[tuple[str, Vectors]]) -> None:
        self.vectors = dict(known)

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> Vectors:
        return np.stack([self.vectors[t] for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return self.vectors[text]


if __name__ == "__main__":
    names = sys.argv[1:] or list(SPECS)
    origin, texts, _ = corpus()
    for name in names:
        built(SPECS[name], origin, texts)
