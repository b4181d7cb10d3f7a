"""Model-written chunk context: Anthropic's contextual retrieval with a model.

With DOCCHAT_CHUNK_CONTEXT=model, ingestion asks the chat model for one sentence per chunk that
says what the chunk is about within its document ("Amazon's 2017 10-K: capital expenditure by
segment"), from the document's opening and the chunk. The sentence joins the chunk's context
(`Chunk.note`, `Chunk.context`): it is embedded and BM25 reads it; the stored, shown and quoted
text stays the page text. Notes are cached per chunk under a key of the model, the prompt, the
document's file name and title and the chunk's text, so a new version of a document asks only
for the chunks that changed, and a failure half way keeps the notes written before it.
Removing a document removes its notes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from docchat.errors import ModelError, ObjectMissingError
from docchat.ingest.artifacts import notes_key
from docchat.llm import TextDelta
from docchat.models import Chunk, Page, file_name
from docchat.ports import ChatModel, Objects

#: Model calls at a time in the cloud's Chunk step (Bedrock); locally one (a laptop model
#: answers one request at a time anyway).
CLOUD_CONCURRENCY = 8
#: Part of every cache key: a new prompt asks again.
PROMPT_VERSION = "1"
#: How much of the document's start the model sees with each chunk (its title page, abstract,
#: table of contents: what says what the document is).
OPENING_CHARS = 6000
#: Room for a thinking model's reasoning before its sentence (the OpenAI-compatible adapter
#: drops the reasoning); a model that does not think stops after the sentence anyway.
MAX_TOKENS = 1024
MAX_NOTE_CHARS = 300
SYSTEM = (
    "You help a search engine index documents. Given the start of a document and one passage "
    "from it, you write one short sentence that situates the passage within the document: "
    "which document it is (its subject, who issued it, its year when known) and what the "
    "passage covers. Write only that sentence, with no preamble."
)


class NoteCache(Protocol):
    """Where notes are kept between ingestions, by key."""

    def notes(self, keys: Sequence[str]) -> dict[str, str]:
        """The notes known for `keys` (the missing ones absent)."""
        ...

    def save_notes(self, notes: Mapping[str, str]) -> None: ...


@dataclass(frozen=True)
class ChunkNotes:
    """Writes (or finds in `cache`) the note of each chunk, with `model`, `concurrency` model
    calls at a time; each round's notes are cached before the next round starts."""

    model: ChatModel
    cache: NoteCache
    concurrency: int = 1

    def noted(
        self,
        chunks: Sequence[Chunk],
        pages: Sequence[Page],
        *,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> list[Chunk]:
        """`chunks` with their notes; `on_progress(noted, chunks)` after the cache is read and
        after each round. Model errors (docchat.errors.ModelError) propagate, after the notes
        written so far are cached."""
        opening = document_opening(pages)
        keys = [self.key(chunk) for chunk in chunks]
        known = self.cache.notes(keys)
        missing = {key: chunk for key, chunk in zip(keys, chunks, strict=True) if key not in known}
        todo = list(missing.items())
        if on_progress:
            on_progress(len(chunks) - len(todo), len(chunks))
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            for start in range(0, len(todo), self.concurrency):
                round_ = todo[start : start + self.concurrency]
                futures = {key: pool.submit(self.write, chunk, opening) for key, chunk in round_}
                written: dict[str, str] = {}
                failure: ModelError | None = None
                for key, future in futures.items():
                    try:
                        written[key] = future.result()
                    except ModelError as exc:
                        failure = failure or exc
                if written:
                    self.cache.save_notes(written)
                    known.update(written)
                    if on_progress:
                        on_progress(len(chunks) - len(todo) + start + len(written), len(chunks))
                if failure is not None:
                    raise type(failure)(
                        f"the chat model could not write the chunk notes "
                        f"(DOCCHAT_CHUNK_CONTEXT=model): {str(failure).rstrip('.')}. The notes "
                        "written so far are kept: adding the file again resumes where this "
                        "stopped."
                    ) from failure
        return [
            chunk.model_copy(update={"note": known[key]})
            for chunk, key in zip(chunks, keys, strict=True)
        ]

    def key(self, chunk: Chunk) -> str:
        """The cache key of a chunk's note: not its document's opening, so that an edit
        elsewhere in the document leaves the notes of the chunks it did not touch."""
        parts = [PROMPT_VERSION, self.model.model_id, _about(chunk), chunk.text]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def write(self, chunk: Chunk, opening: str) -> str:
        prompt = (
            f"<document {_about(chunk)}>\n{opening}\n</document>\n\n"
            f"<passage>\n{chunk.text}\n</passage>\n\n"
            "Situate the passage within the document in one short sentence."
        )
        events = self.model.stream(
            system=SYSTEM,
            messages=[{"role": "user", "content": prompt}],
            tools=[],
            max_tokens=MAX_TOKENS,
        )
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        return one_sentence(text)


class StoredNotes:
    """The cloud's cache: one document's notes as one JSON object (key -> note) in a bucket,
    written again after each round of notes; only the notes of the current chunks are kept."""

    def __init__(self, objects: Objects, bucket: str, doc_id: str) -> None:
        self._objects, self._bucket, self._key = objects, bucket, notes_key(doc_id)
        self._kept: dict[str, str] = {}

    def notes(self, keys: Sequence[str]) -> dict[str, str]:
        try:
            stored = self._objects.read_json(self._bucket, self._key)
        except ObjectMissingError:
            stored = {}
        known = stored if isinstance(stored, dict) else {}
        self._kept = {key: str(known[key]) for key in keys if key in known}
        return dict(self._kept)

    def save_notes(self, notes: Mapping[str, str]) -> None:
        self._kept.update(notes)
        self._objects.write_json(self._bucket, self._key, self._kept)


def _about(chunk: Chunk) -> str:
    """The document's file name and title, as attributes of the prompt's document tag."""
    name = chunk.file_name or (file_name(chunk.source) if chunk.source else "")
    return f"file={json.dumps(name)} title={json.dumps(chunk.title)}"


def document_opening(pages: Sequence[Page]) -> str:
    """The document's first OPENING_CHARS characters of page text."""
    opening = "\n\n".join(page.markdown for page in pages[:20])
    return opening[:OPENING_CHARS]


def one_sentence(text: str) -> str:
    """The model's answer as one line of at most MAX_NOTE_CHARS characters (cut at a word)."""
    line = " ".join(text.split())
    if len(line) <= MAX_NOTE_CHARS:
        return line
    return line[: MAX_NOTE_CHARS - 1].rsplit(" ", 1)[0] + "…"
