"""Where the cloud keeps what ingestion makes, in the artifacts bucket: the one place its key
layout is written (template.yaml's IAM statements and lifecycle rule name the same prefixes).

- `<prefix><doc_id>/<version>/...` (prefix: DOCCHAT_ARTIFACTS_PREFIX, `artifacts/`): one run's
  intermediate files (chunk batches, their vectors, OCR results), expired after
  ArtifactsRetentionDays.
- `pages/<doc_id>/<version>.json`: a version's page text, kept while that version is the
  document's (GET /documents/{id}/pages/{n} reads it).
- `notes/<doc_id>.json`: the model-written chunk notes of a document (DOCCHAT_CHUNK_CONTEXT=model).
"""

from __future__ import annotations

PAGES_PREFIX = "pages/"
NOTES_PREFIX = "notes/"


def run_key(prefix: str, doc_id: str, version: str, name: str) -> str:
    """An intermediate file of the run ingesting `version` of `doc_id`."""
    return f"{prefix}{doc_id}/{version}/{name}"


def chunks_key(prefix: str, doc_id: str, version: str, batch: int) -> str:
    """The `batch`-th batch of chunks the Embed and Index map works through."""
    return run_key(prefix, doc_id, version, f"chunks/{batch:05d}.json")


def vectors_key(batch_key: str) -> str:
    """Where the vectors of the chunk batch at `batch_key` are kept."""
    return batch_key.replace("/chunks/", "/vectors/").removesuffix(".json") + ".npy"


def ocr_key(prefix: str, doc_id: str, version: str, pages: list[int]) -> str:
    """Where the OCR step keeps the lines it read on `pages`."""
    return run_key(prefix, doc_id, version, f"ocr/{pages[0]}-{pages[-1]}.json")


def pages_prefix(doc_id: str) -> str:
    """Every version's page text of `doc_id`."""
    return f"{PAGES_PREFIX}{doc_id}/"


def pages_key(doc_id: str, version: str) -> str:
    """One version's page text."""
    return f"{pages_prefix(doc_id)}{version}.json"


def notes_key(doc_id: str) -> str:
    """A document's model-written chunk notes."""
    return f"{NOTES_PREFIX}{doc_id}.json"
