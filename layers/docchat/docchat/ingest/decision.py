"""What one document version is, and what to do with it: the one decision the CLI, the local
server's uploads and the cloud's Register step share.

A document is its source (a local path, or bucket/key): `doc_id_for` names it. A version is its
bytes: `version_of` hashes them. Given what the registry holds for the document, `decide` says
whether these bytes are already handled (`unchanged`), are another document's bytes under a new
name (`duplicate`), or are to be ingested (`ingest`, as the document's next revision). In the
cloud, an S3 event's sequencer orders the events of one key: `newer` says when the registry
already holds a later one, so a stale event changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from docchat.models import (
    Chunk,
    DocStatus,
    DocumentRecord,
    RegistryEntry,
    file_name,
    own_file_name,
)

SEQUENCER_WIDTH = 32


def doc_id_for(source: str) -> str:
    """A stable, readable id for a document source (a path, or bucket/key)."""
    stem = Path(source).stem.casefold()
    slug = re.sub(r"[^a-z0-9]+", "-", stem).strip("-")[:40] or "doc"
    return f"{slug}-{hashlib.sha256(source.encode()).hexdigest()[:8]}"


def version_of(data: bytes) -> str:
    """The content hash that identifies one version of a document."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Decision:
    outcome: Literal["unchanged", "duplicate", "ingest"]
    reason: str = ""
    revision: int = 1  # the version's revision number, when it is ingested
    twin: str = ""  # the document already holding these bytes, for a duplicate


def decide(
    current: DocumentRecord | None,
    version: str,
    *,
    twin: str = "",
    indexed_here: bool = True,
    running: bool = False,
    again: bool = False,
) -> Decision:
    """What to do with `version` of the document the registry holds as `current`.

    `twin`: another document whose indexed version has these bytes (the local index knows; the
    cloud registry does not look). `indexed_here`: whether `current` was indexed in the index
    this ingestion writes to (not so after the collection or the embedding model changed).
    `running`: whether a run is ingesting `current`'s version right now (the cloud, where
    another execution may be at work on it). `again`: read anew all the same (`docchat ingest
    --again`, after an upgrade that reads documents better)."""
    if again:
        return Decision("ingest", revision=next_revision(current, version))
    if current is not None and current.version == version:
        if current.status == DocStatus.INDEXED and indexed_here:
            return Decision("unchanged", reason="unchanged: this version is already handled")
        if running:
            return Decision("unchanged", reason="unchanged: a run is ingesting this version")
    if twin and (current is None or twin != current.doc_id):
        return Decision(
            "duplicate",
            reason="these bytes are indexed already",
            revision=next_revision(current, version),
            twin=twin,
        )
    return Decision("ingest", revision=next_revision(current, version))


def copy_record(
    twin: DocumentRecord, source: str, revision: int, *, name: str = ""
) -> DocumentRecord:
    """The record of `source` (read as file `name`, by default the source's), whose bytes the
    indexed document `twin` holds: a document of its own (listed, opened and deleted by
    itself) made from the twin's chunks. It keeps the twin's title unless that was only the
    twin's file name."""
    own_name = twin.title == PurePosixPath(twin.file_name).stem
    name = name or file_name(source)
    return twin.model_copy(
        update={
            "doc_id": doc_id_for(source),
            "source": source,
            "file_name": name,
            "title": PurePosixPath(name).stem if own_name else twin.title,
            "revision": revision,
        }
    )


def copy_chunk(chunk: Chunk, from_doc_id: str, record: DocumentRecord) -> Chunk:
    """`chunk` of document `from_doc_id` as a chunk of its copy `record` (see copy_record)."""
    return chunk.model_copy(
        update={
            "chunk_id": record.doc_id + chunk.chunk_id[len(from_doc_id) :],
            "doc_id": record.doc_id,
            "source": record.source,
            "version": record.version,
            "file_name": own_file_name(record.source, record.file_name),
        }
    )


def next_revision(current: DocumentRecord | None, version: str) -> int:
    """The revision number of `version` of a document whose record is now `current`."""
    if current is None:
        return 1
    return current.revision if current.version == version else current.revision + 1


def normalized_sequencer(sequencer: str) -> str:
    """S3 sequencers compare as hex strings once right-padded with zeros to one width."""
    return sequencer.upper().ljust(SEQUENCER_WIDTH, "0")


def newer(entry: RegistryEntry | None, sequencer: str) -> bool:
    """Whether the registry holds the document from an event newer than `sequencer`'s."""
    return entry is not None and entry.sequencer > sequencer
