"""`SqliteIndex`: both ports of the index (ports.DocumentCatalog and ports.ChunkStore) and the
page store, over one SQLite file and its segments; each write is one transaction that
touches only its documents' rows, and the next search applies it without reading the rest."""

from __future__ import annotations

import errno
import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from docchat.adapters.sqlite_index import pages as texts
from docchat.adapters.sqlite_index.catalog import Records, record_of, write_record
from docchat.adapters.sqlite_index.changes import Write
from docchat.adapters.sqlite_index.chunks import ChunkRows
from docchat.adapters.sqlite_index.live import LiveIndex
from docchat.adapters.sqlite_index.maintenance import Maintenance, segments_folder
from docchat.adapters.sqlite_index.schema import prepare
from docchat.adapters.sqlite_index.search import Hit
from docchat.adapters.sqlite_index.store import Database
from docchat.adapters.sqlite_index.wanted import EVERY_ROW, Wanted, wanted_rows
from docchat.errors import StorageError, StorageFullError
from docchat.ingest.decision import copy_chunk
from docchat.models import Chunk, DocStatus, DocumentRecord, Page
from docchat.ports import SentenceVectors, Vectors

logger = logging.getLogger(__name__)
# Filters whose rows are kept worked out (a chat's and a scoped chat's, taking turns).
KEPT_FILTERS = 8


class SqliteIndex:
    """Documents, chunks and vectors of one embedding model in a single SQLite file (and the
    segments saved beside it, `<file stem>.segments/`)."""

    def __init__(
        self, path: Path, *, embedding_model: str, dimension: int, create: bool = True
    ) -> None:
        """Open (or with `create`, make) the index at `path`. Where the file or its folder is
        not writable the index opens read-only: searching works, writes raise
        ReadOnlyStorageError (a team can share a published index). Opening reads nothing of
        the chunks; a file written before segments existed is saved as segments first."""
        self.path = path
        self.embedding_model = embedding_model
        self.dimension = dimension
        self._db = Database(path, create=create)
        self._closed = False
        self._maintenance: Maintenance | None = None
        self._rows = ChunkRows(embedding_model=embedding_model, dimension=dimension)
        try:
            prepare(self._db, self._rows, embedding_model=embedding_model, dimension=dimension)
            self._records = Records(self._db)
            self._live = LiveIndex(self._db, segments_folder(path), dimension=dimension)
            self._maintenance = None if self.read_only else Maintenance(self._db, self._live)
            if self._maintenance is not None:
                self._maintenance.check()
                self._maintenance.clean()
                self._maintenance.run()
        except BaseException:
            self._close_file()
            raise
        # The last filters worked out, with the `versions` mapping each was for (see _wanted).
        self._wanted_for: dict[object, tuple[Mapping[str, str] | None, Wanted]] = {}
        self._filters_lock = threading.Lock()

    @property
    def location(self) -> str:
        """The index file (what the cloud pipeline's Register compares; see ports.ChunkStore)."""
        return str(self.path)

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    def flush(self) -> None:
        """Save the rows written since the last flush as segments (the next open then reads
        none of them from the index file). StorageFullError when the disk is full: the rows
        stay in the index file, which holds every row, and the next open that has room saves
        them; nothing indexed is lost."""
        if self._maintenance is None or self._closed:
            return
        try:
            self._maintenance.run(everything=True)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise StorageFullError(
                f"the disk holding {self.path.parent} is full: every document indexed is kept, "
                "but the search files could not be saved (the next docchat command that has "
                "room saves them)"
            ) from exc

    def close(self) -> None:
        """Flush the rows written since the last flush (where writable), then close the file.
        A flush that fails leaves them in the file, which holds every row: the next open reads
        them. A caller that must say so flushes first (`flush`)."""
        try:
            self.flush()
        except (StorageError, OSError) as exc:
            logger.warning("rows left unflushed at close", extra={"reason": str(exc)})
        self._close_file()

    def _close_file(self) -> None:
        self._closed = True
        self._db.close()
        self._rows.close()

    @contextmanager
    def _write(self) -> Iterator[Write]:
        """One write transaction, logged (changes.py); the next search applies it, and due
        segment work (maintenance.py) follows a write that went through."""
        try:
            with self._db.transaction() as db:
                write = Write(db, self._rows)
                yield write
                write.finish()
        finally:
            self._live.changed()
        if self._maintenance is not None:
            self._maintenance.run()

    # --- documents ---------------------------------------------------------------------------

    def revision(self) -> int:
        """A number that changes with every write to the file (by any process)."""
        return self._live.revision()

    def document(self, doc_id: str) -> DocumentRecord | None:
        return self._live.records().get(doc_id)

    def documents(self) -> list[DocumentRecord]:
        return sorted(self._live.records().values(), key=lambda r: (r.source, r.doc_id))

    def unfinished(self) -> list[DocumentRecord]:
        """Documents whose indexing started and has not ended (INDEXED or FAILED)."""
        done = (DocStatus.INDEXED, DocStatus.FAILED)
        return [d for d in self.documents() if d.status not in done]

    def find_document(self, ref: str, *, path: str | None = None) -> DocumentRecord:
        """The one document `ref` names exactly: its id, its source, `path` (`ref` resolved by
        the caller), or its file name."""
        return self._records.find_document(ref, path=path)

    def indexed_version(self, version: str) -> DocumentRecord | None:
        """An indexed document whose content is exactly this version, if there is one."""
        return self._records.indexed_version(version)

    def set_record(self, record: DocumentRecord) -> None:
        """Write a document's registry entry, leaving its chunks as they are; the page text of
        a version it leaves goes when no other record names it."""
        with self._write() as write:
            before = record_of(write.db, record.doc_id)
            write_record(write.db, record)
            write.touched(record.doc_id)
            if before is not None and before.version != record.version:
                texts.drop_left(write.db, record.doc_id, before.version)

    def forget(self, doc_id: str) -> None:
        """Remove the document's record (and its page text, sentence vectors kept for a
        cluster's chunks and notes, where nothing else uses them); its chunks stay."""
        with self._write() as write:
            before = record_of(write.db, doc_id)
            write.db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            write.touched(doc_id)
            if before is not None:
                texts.drop_left(write.db, doc_id, before.version)

    def keep_pages(self, version: str, pages: Sequence[Page]) -> None:
        """Keep `pages` as the text of this content version, before a record names it."""
        with self._db.transaction() as db:
            texts.write_pages(db, version, pages)

    # --- writes of chunks --------------------------------------------------------------------

    def replace_document(
        self,
        record: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: Vectors,
        *,
        pages: Sequence[Page] = (),
    ) -> None:
        """Swap a document's chunks (and its page text, when given) for a new version's and
        mark it indexed, in one transaction: how bench/ and evaluate/ build an index of their
        own quickly (local ingestion goes through ingest/shelf.py, as for every store)."""
        with self._write() as write:
            before = record_of(write.db, record.doc_id)
            write.remove_chunks("doc_id = ?", (record.doc_id,))
            write.add_chunks(chunks, vectors)
            if pages:
                texts.write_pages(write.db, record.version, pages)
            indexed = record.model_copy(update={"status": DocStatus.INDEXED, "chunks": len(chunks)})
            write_record(write.db, indexed)
            write.touched(record.doc_id)
            if before is not None and before.version != record.version:
                texts.drop_left(write.db, record.doc_id, before.version)

    def copy_document(self, from_doc_id: str, record: DocumentRecord) -> int:
        """Copy the chunks of `from_doc_id` at `record.version` (their vectors and sentence
        vectors, under `record`'s id and source) as `record`'s, instead of any it had,
        embedding nothing: the same bytes under a second name; how many were copied."""
        with self._write() as write:
            found = write.db.execute(
                "SELECT * FROM chunks WHERE doc_id = ? AND version = ? ORDER BY id",
                (from_doc_id, record.version),
            ).fetchall()
            write.remove_chunks("doc_id = ?", (record.doc_id,))
            copies = [copy_chunk(self._rows.chunk(row), from_doc_id, record) for row in found]
            vectors = np.frombuffer(b"".join(row["vector"] for row in found), dtype=np.float32)
            first = write.add_chunks(copies, vectors.reshape(len(found), self.dimension))
            write.db.executemany(
                "INSERT INTO sentences (row, starts, vectors)"
                " SELECT ?, starts, vectors FROM sentences WHERE row = ?",
                [(first + n, row["id"]) for n, row in enumerate(found)],
            )
            write.touched(record.doc_id)
        return len(copies)

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        """Add chunks (a retried batch replaces its own earlier copy): the pipeline's write."""
        with self._write() as write:
            ids = [c.chunk_id for c in chunks]
            write.remove_chunks(f"chunk_id IN ({', '.join('?' for _ in ids)})", ids)
            write.add_chunks(chunks, vectors)

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]:
        """Remove the document's chunks of every version but `version` (reading first, so a
        document that has none writes nothing)."""
        others = self._db.rows(
            "SELECT 1 FROM doc_chunks WHERE doc_id = ? AND version != ? LIMIT 1", (doc_id, version)
        )
        if not others:
            return {"old": 0, "duplicates": 0}
        with self._write() as write:
            old = write.remove_chunks("doc_id = ? AND version != ?", (doc_id, version))
        return {"old": old, "duplicates": 0}

    def delete_document(self, doc_id: str) -> None:
        """Remove every chunk of the document, all versions (a copy of it under another name
        stays whole), and the notes no chunk carries any more."""
        with self._write() as write:
            write.remove_chunks("doc_id = ?", (doc_id,))
            write.touched(doc_id)
            texts.drop_unused_notes(write.db)

    # --- page text and notes -----------------------------------------------------------------

    def stored_pages(self, doc_id: str, version: str) -> list[Page] | None:
        """The pages kept for this content (identical files share them); None without any."""
        return texts.stored_pages(self._db, version)

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, SentenceVectors]:
        """The sentence vectors kept for these chunks (see ports.ChunkStore): of the file's
        own chunks, or of a cluster's (kept here by chunk id, wiring/local.py)."""
        return texts.sentence_vectors(self._db, chunk_ids, dimension=self.dimension)

    def save_sentence_vectors(self, found: Mapping[str, SentenceVectors]) -> None:
        """Keep these chunks' sentence vectors; a read-only or busy file keeps nothing (they
        are computed again when next needed)."""
        if self.read_only or not found:
            return
        try:
            with self._db.transaction() as db:
                texts.save_sentence_vectors(db, found)
        except StorageError:
            return

    def notes(self, keys: Sequence[str]) -> dict[str, str]:
        return texts.notes(self._db, keys)

    def save_notes(self, notes: Mapping[str, str]) -> None:
        with self._db.transaction() as db:
            texts.save_notes(db, notes)

    # --- reading chunks and searching --------------------------------------------------------

    def count(self, doc_id: str | None = None) -> int:
        if doc_id is None:
            return int(self._db.rows("SELECT COALESCE(SUM(chunks), 0) FROM doc_chunks")[0][0])
        return int(
            self._db.rows(
                "SELECT COALESCE(SUM(chunks), 0) FROM doc_chunks WHERE doc_id = ?", (doc_id,)
            )[0][0]
        )

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id."""
        if not chunk_ids:
            return {}
        rows = self._db.rows(
            f"SELECT * FROM chunks WHERE chunk_id IN ({', '.join('?' for _ in chunk_ids)})",
            list(chunk_ids),
        )
        return {row["chunk_id"]: self._rows.chunk(row) for row in rows}

    def document_chunks(self, doc_id: str, *, version: str | None = None) -> list[Chunk]:
        """A document's chunks in reading order, of one version when `version` is given."""
        if version is None:
            rows = self._db.rows("SELECT * FROM chunks WHERE doc_id = ? ORDER BY id", (doc_id,))
        else:
            rows = self._db.rows(
                "SELECT * FROM chunks WHERE doc_id = ? AND version = ? ORDER BY id",
                (doc_id, version),
            )
        return [self._rows.chunk(row) for row in rows]

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """Cosine top-k as (chunk id, similarity), best first (see search.py)."""
        view = self._live.view()
        wanted = self._wanted(doc_ids, versions)
        if wanted.nothing or k <= 0:
            return []
        masks = view.masks(wanted.rows, keep=wanted.keep)
        return self._named(view.vector_search(query, k=k, masks=masks))

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 top-k as (chunk id, score where higher is better), best first."""
        terms = self._rows.tokenizer.query_terms(query)
        if not terms:
            return []
        view = self._live.view()
        wanted = self._wanted(doc_ids, versions)
        if wanted.nothing or k <= 0:
            return []
        known: dict[str, int] = {
            str(term): int(term_id)
            for term, term_id in self._db.rows(
                "SELECT term, id FROM terms WHERE term IN (SELECT value FROM json_each(?))",
                (json.dumps(terms),),
            )
        }
        term_ids = [known[term] for term in terms if term in known]
        masks = view.masks(wanted.rows, keep=wanted.keep)
        return self._named(view.keyword_search(term_ids, k=k, masks=masks))

    def _wanted(self, doc_ids: Sequence[str] | None, versions: Mapping[str, str] | None) -> Wanted:
        """The rows these filters keep, worked out again only when the filters or the index
        changed: a chat passes the same `versions` mapping until the registry changes."""
        if doc_ids is None and versions is None:
            return EVERY_ROW
        key = (None if doc_ids is None else tuple(doc_ids), id(versions), self._live.revision())
        with self._filters_lock:
            kept = self._wanted_for.get(key)
        if kept is not None and kept[0] is versions:
            return kept[1]
        wanted = wanted_rows(self._db, self._live.pairs(), doc_ids=doc_ids, versions=versions)
        with self._filters_lock:
            while len(self._wanted_for) >= KEPT_FILTERS:
                self._wanted_for.pop(next(iter(self._wanted_for)))
            self._wanted_for[key] = (versions, wanted)
        return wanted

    def _named(self, hits: Sequence[Hit]) -> list[tuple[str, float]]:
        """(chunk id, score) of each hit still in the file, in order."""
        if not hits:
            return []
        ids: dict[int, str] = {
            int(row): str(chunk_id)
            for row, chunk_id in self._db.rows(
                f"SELECT id, chunk_id FROM chunks WHERE id IN ({', '.join('?' for _ in hits)})",
                [row for row, _ in hits],
            )
        }
        return [(ids[row], score) for row, score in hits if row in ids]

    def stats(self) -> dict[str, Any]:
        by_status: dict[str, int] = {
            str(row[0]): int(row[1])
            for row in self._db.rows("SELECT status, COUNT(*) FROM documents GROUP BY status")
        }
        totals = self._db.rows(
            "SELECT COUNT(*), COALESCE(SUM(pages), 0) FROM documents WHERE status = ?",
            (DocStatus.INDEXED.value,),
        )[0]
        return {
            "documents": sum(by_status.values()),
            "by_status": by_status,
            "indexed_pages": totals[1],
            "chunks": self.count(),
            "embedding_model": self.embedding_model,
            "dimension": self.dimension,
            "path": str(self.path),
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
        }
