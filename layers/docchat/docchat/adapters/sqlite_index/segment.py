"""A segment: a fixed set of chunk rows held column by column for searching them.

Each row's vector, BM25 length and postings (the weighted frequencies of its terms, grouped by
term). A segment is never changed: rows written since the last flush are small segments in
memory; `save` writes a segment's columns one after another into columns.bin (columns.json
says where each is), which `load` maps into memory (so opening costs the same at any size),
with an HNSW graph (graph.py) once it is large; `merged` makes one segment of several, leaving
out the rows removed meanwhile. Row ids are the chunks
table's ids, ascending within a segment, never reused.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from docchat.adapters.sqlite_index.graph import Graph

Mask = NDArray[np.bool_]
_COLUMNS = ("rows", "vectors", "lengths", "terms", "starts", "post_rows", "post_freqs")
COLUMNS_FILE, MANIFEST_FILE, GRAPH_FILE = "columns.bin", "columns.json", "graph.usearch"
# Terms whose postings are regrouped at once when segments merge: bounds the merge's memory.
_TERM_BLOCK = 65_536
# Rows whose vectors are copied at once when segments merge into a file.
_VECTOR_BLOCK = 16_384


@dataclass(frozen=True, eq=False)
class Segment:
    """Rows' columns: `rows` (chunk row ids, ascending), `vectors` (one per row), `lengths`
    (tokens, for BM25's length norm) and postings: the rows of `terms[i]` (term ids,
    ascending) are `post_rows[starts[i]:starts[i + 1]]` (positions in this segment, ascending),
    with their weighted frequencies in `post_freqs`."""

    rows: NDArray[np.int64]
    vectors: NDArray[np.float32]
    lengths: NDArray[np.int32]
    terms: NDArray[np.int32]
    starts: NDArray[np.int64]
    post_rows: NDArray[np.int32]
    post_freqs: NDArray[np.float32]
    graph: Graph | None = None
    folder: Path | None = None  # where it is saved; None: in memory only
    vectors_offset: int = 0  # where the vectors begin in the saved columns.bin

    def __len__(self) -> int:
        return len(self.rows)

    @classmethod
    def of_rows(
        cls,
        rows: NDArray[np.int64],
        vectors: NDArray[np.float32],
        lengths: NDArray[np.int32],
        term_ids: Sequence[bytes],
        term_freqs: Sequence[bytes],
    ) -> Segment:
        """A segment of rows as the chunks table stores them (ascending ids; per row its int32
        term ids and float32 weighted frequencies as bytes)."""
        terms = np.frombuffer(b"".join(term_ids), dtype=np.int32)
        freqs = np.frombuffer(b"".join(term_freqs), dtype=np.float32)
        sizes = np.fromiter((len(ids) // 4 for ids in term_ids), dtype=np.intp, count=len(rows))
        owners = np.repeat(np.arange(len(rows), dtype=np.int32), sizes)
        return cls._grouped(rows, vectors, lengths, terms, owners, freqs)

    @classmethod
    def _grouped(
        cls,
        rows: NDArray[np.int64],
        vectors: NDArray[np.float32],
        lengths: NDArray[np.int32],
        terms: NDArray[np.int32],
        owners: NDArray[np.int32],
        freqs: NDArray[np.float32],
    ) -> Segment:
        """From postings in row order: grouped by term (a stable sort keeps rows ascending)."""
        order = np.argsort(terms, kind="stable")
        sorted_terms = terms[order]
        unique, first = np.unique(sorted_terms, return_index=True)
        return cls(
            rows=np.asarray(rows, dtype=np.int64),
            vectors=np.asarray(vectors, dtype=np.float32),
            lengths=np.asarray(lengths, dtype=np.int32),
            terms=unique.astype(np.int32),
            starts=np.append(first, len(sorted_terms)).astype(np.int64),
            post_rows=owners[order].astype(np.int32),
            post_freqs=freqs[order].astype(np.float32),
        )

    def postings(self, term_id: int) -> tuple[NDArray[np.int32], NDArray[np.float32]]:
        """The positions (ascending) of the rows holding `term_id`, and its frequencies there."""
        at = int(np.searchsorted(self.terms, term_id))
        if at == len(self.terms) or self.terms[at] != term_id:
            return self.post_rows[:0], self.post_freqs[:0]
        low, high = int(self.starts[at]), int(self.starts[at + 1])
        return self.post_rows[low:high], self.post_freqs[low:high]

    def vectors_at(self, positions: NDArray[np.intp]) -> NDArray[np.float32]:
        """The vectors of these rows. From a saved segment they are read from its file rather
        than through the mapping: a page fault maps a whole folio of the page cache (hundreds
        of KB here), so a few hundred searches' scattered rows would put every page of the
        file in the process's memory."""
        if self.folder is None or not len(positions):
            return np.asarray(self.vectors[positions])
        row = self.vectors.shape[1] * 4
        with (self.folder / COLUMNS_FILE).open("rb", buffering=0) as file:
            fd, at = file.fileno(), self.vectors_offset
            data = b"".join(os.pread(fd, row, at + int(p) * row) for p in positions)
        return np.frombuffer(data, dtype=np.float32).reshape(len(positions), -1)

    def positions(self, rows: NDArray[np.int64]) -> NDArray[np.intp]:
        """The positions of those of `rows` (ascending) that this segment holds."""
        at = np.searchsorted(self.rows, rows)
        inside = at < len(self.rows)
        at = at[inside]
        found: NDArray[np.intp] = at[self.rows[at] == rows[inside]].astype(np.intp)
        return found

    # --- files ---------------------------------------------------------------------------

    def save(self, folder: Path, *, graph: bool) -> Segment:
        """Write the columns (and an HNSW graph, with `graph`) into `folder`, made anew; the
        segment as mapped from there."""
        partial = _made_anew(folder)
        with _ColumnWriter(partial) as out:
            for column in _COLUMNS:
                out.add(column, getattr(self, column))
        if graph and len(self):
            Graph.build(self.vectors, partial / GRAPH_FILE)
        return _placed(partial, folder)

    @classmethod
    def load(cls, folder: Path) -> Segment:
        """The segment saved in `folder`, its columns mapped into memory, not read; the vectors
        of a segment without a graph are read (every search scans them all, and reading them
        at once costs a fraction of faulting the mapping in page by page)."""
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
        columns = _mapped(folder / COLUMNS_FILE, manifest)
        graph_file = folder / GRAPH_FILE
        graph = Graph.open(graph_file) if graph_file.is_file() else None
        vectors = manifest["vectors"]
        if graph is None:
            columns["vectors"] = np.array(columns["vectors"])
        return cls(**columns, graph=graph, folder=folder, vectors_offset=vectors["offset"])

    # --- merging -------------------------------------------------------------------------

    @classmethod
    def merged(cls, parts: Sequence[tuple[Segment, Mask | None]]) -> Segment:
        """One in-memory segment of the live rows (mask; None: all) of `parts`, which hold
        ascending, disjoint ranges of rows in that order."""
        kept = _kept(parts)
        dimension = kept[0][0].vectors.shape[1] if kept else 0
        vectors = [s.vectors[m] for s, m in kept] + [np.zeros((0, dimension), np.float32)]
        return cls(vectors=np.concatenate(vectors), **_merged_columns(kept))

    @classmethod
    def merged_into(
        cls, folder: Path, parts: Sequence[tuple[Segment, Mask | None]], *, graph: bool
    ) -> Segment:
        """Like `merged`, saved into `folder`: the vectors go to the file part by part, never
        all in memory at once."""
        kept = _kept(parts)
        partial = _made_anew(folder)
        dimension = kept[0][0].vectors.shape[1] if kept else 0
        count = sum(int(m.sum()) for _, m in kept)
        with _ColumnWriter(partial) as out:
            for column, values in _merged_columns(kept).items():
                out.add(column, values)
            out.start("vectors", np.float32, (count, dimension))
            for segment, live in kept:
                for at in range(0, len(segment), _VECTOR_BLOCK):
                    block = np.asarray(segment.vectors[at : at + _VECTOR_BLOCK])
                    out.write(block[live[at : at + _VECTOR_BLOCK]])
        if graph and count:
            manifest = json.loads((partial / MANIFEST_FILE).read_text())
            vectors = _mapped(partial / COLUMNS_FILE, manifest)["vectors"]
            Graph.build(vectors, partial / GRAPH_FILE)
        return _placed(partial, folder)


class _ColumnWriter:
    """Writes arrays one after another into columns.bin, each at a 64-byte boundary, and where
    each is (dtype, shape, offset) into columns.json when closed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.out = (folder / COLUMNS_FILE).open("wb")
        self.manifest: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> _ColumnWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.out.close()
        (self.folder / MANIFEST_FILE).write_text(json.dumps(self.manifest))

    def start(self, name: str, dtype: Any, shape: tuple[int, ...]) -> None:
        """Begin the column `name`; `write` its data next."""
        self.out.write(b"\0" * (-self.out.tell() % 64))
        self.manifest[name] = {
            "dtype": np.dtype(dtype).str,
            "shape": list(shape),
            "offset": self.out.tell(),
        }

    def write(self, values: NDArray[Any]) -> None:
        self.out.write(np.ascontiguousarray(values).tobytes())

    def add(self, name: str, values: NDArray[Any]) -> None:
        self.start(name, values.dtype, values.shape)
        self.write(values)


def _mapped(path: Path, manifest: dict[str, dict[str, Any]]) -> dict[str, NDArray[Any]]:
    """The columns of columns.bin at `path`, as read-only arrays over one mapping of it. A
    search reads a few rows of a column here and there: the kernel is told so, so that it does
    not read ahead around each."""
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    if isinstance(mapped, mmap.mmap) and hasattr(mmap, "MADV_RANDOM"):
        mapped.madvise(mmap.MADV_RANDOM)
    return {
        name: np.frombuffer(
            mapped,
            dtype=np.dtype(spec["dtype"]),
            count=math.prod(spec["shape"]),
            offset=spec["offset"] if size else 0,
        ).reshape(spec["shape"])
        for name, spec in manifest.items()
    }


def _kept(parts: Sequence[tuple[Segment, Mask | None]]) -> list[tuple[Segment, Mask]]:
    return [(s, np.ones(len(s), bool) if m is None else np.asarray(m, bool)) for s, m in parts]


def _merged_columns(kept: Sequence[tuple[Segment, Mask]]) -> dict[str, Any]:
    """Every column but the vectors of the live rows of `kept`, postings regrouped by term."""
    new_at, offset = [], 0
    for _, live in kept:
        new_at.append(np.where(live, offset + np.cumsum(live) - 1, -1).astype(np.int64))
        offset += int(live.sum())
    all_terms = np.unique(np.concatenate([s.terms for s, _ in kept] + [np.zeros(0, np.int32)]))
    blocks = [
        _postings_block(kept, new_at, all_terms[at : at + _TERM_BLOCK])
        for at in range(0, len(all_terms), _TERM_BLOCK)
    ]
    terms = np.concatenate([b[0] for b in blocks] + [np.zeros(0, np.int32)])
    unique, first = np.unique(terms, return_index=True)
    return {
        "rows": np.concatenate([s.rows[m] for s, m in kept] + [np.zeros(0, np.int64)]),
        "lengths": np.concatenate([s.lengths[m] for s, m in kept] + [np.zeros(0, np.int32)]),
        "terms": unique.astype(np.int32),
        "starts": np.append(first, len(terms)).astype(np.int64),
        "post_rows": np.concatenate([b[1] for b in blocks] + [np.zeros(0, np.int32)]),
        "post_freqs": np.concatenate([b[2] for b in blocks] + [np.zeros(0, np.float32)]),
    }


def _postings_block(
    parts: Sequence[tuple[Segment, Mask]],
    new_at: Sequence[NDArray[np.int64]],
    terms: NDArray[np.int32],
) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.float32]]:
    """The postings of `terms` (ascending) in every part, at the rows' new positions, as
    (term, position, frequency) grouped by term with positions ascending."""
    found_terms, found_rows, found_freqs = [], [], []
    for (segment, _), mapping in zip(parts, new_at, strict=True):
        low, high = np.searchsorted(segment.terms, [terms[0], terms[-1] + 1])
        if low == high:
            continue
        first, last = int(segment.starts[low]), int(segment.starts[high])
        counts = np.diff(segment.starts[low : high + 1])
        term_of = np.repeat(segment.terms[low:high], counts)
        rows = mapping[segment.post_rows[first:last]]
        keep = rows >= 0
        found_terms.append(term_of[keep])
        found_rows.append(rows[keep].astype(np.int32))
        found_freqs.append(np.asarray(segment.post_freqs[first:last])[keep])
    if not found_terms:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32)
    term_of = np.concatenate(found_terms)
    # Parts come in row order, and each part's rows ascend per term: a stable sort keeps that.
    order = np.argsort(term_of, kind="stable")
    return term_of[order], np.concatenate(found_rows)[order], np.concatenate(found_freqs)[order]


def _made_anew(folder: Path) -> Path:
    """An empty folder beside `folder` to write a segment into (see `_placed`)."""
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    return partial


def _placed(partial: Path, folder: Path) -> Segment:
    """The segment written into `partial`, on disk and renamed to `folder`: a segment folder
    is whole or absent."""
    for path in partial.iterdir():
        with path.open("rb") as handle:
            os.fsync(handle.fileno())
    partial.rename(folder)
    return Segment.load(folder)
