"""What an OpenSearch chunk index holds: its settings and strict mapping, the fields of a chunk
in `_source`, the fields BM25 reads, and the index's name for one embedding model."""

from __future__ import annotations

import re
from typing import Any

from docchat.errors import ConfigError

#: Fields of a chunk as stored in `_source`, next to `vector`.
CHUNK_FIELDS = (
    "chunk_id",
    "doc_id",
    "version",
    "source",
    "title",
    "headings",
    "page_start",
    "page_end",
    "page_breaks",
    "page_labels",
    "file_name",
    "text",
    "embedding_model",
)
#: BM25 reads a chunk with its context (`Chunk.embed_text`: file name, title, heading path,
#: text) from this field; `text` stays the page text that is shown and quoted.
CONTEXTUAL_FIELD = "contextual_text"
#: Fields of the BM25 query, boosted with `^` (multi_match, best_fields: the best field's score;
#: https://docs.opensearch.org/3.5/query-dsl/full-text/multi-match). `text` still finds the
#: chunks written before CONTEXTUAL_FIELD existed, which lack it until their file is ingested
#: again.
KEYWORD_FIELDS = [CONTEXTUAL_FIELD, "text", "title^2", "headings^3"]
ENGLISH = {"type": "text", "analyzer": "english"}
LABELS = {"type": "keyword", "index": False, "doc_values": False}
VALID_PREFIX = re.compile(r"[a-z0-9][a-z0-9_-]*")
_MAX_INDEX_NAME = 255


def index_body(dimension: int) -> dict[str, Any]:
    """Settings and mapping of a chunk index whose vectors have `dimension` components."""
    english = ENGLISH
    keyword = {"type": "keyword"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    # Embeddings are L2-normalised, so inner product ranks like cosine.
                    "method": {"name": "hnsw", "engine": "faiss", "space_type": "innerproduct"},
                },
                "text": english,
                CONTEXTUAL_FIELD: english,
                "title": english,
                "headings": english,
                "chunk_id": keyword,
                "doc_id": keyword,
                "version": keyword,
                "source": keyword,
                "embedding_model": keyword,
                "page_start": {"type": "integer"},
                "page_end": {"type": "integer"},
                # Kept in _source to map quotes to pages; never searched or sorted on.
                "page_breaks": {"type": "integer", "index": False, "doc_values": False},
                # A non-PDF document's page labels ("Slide 3: Results"), for citations.
                "page_labels": LABELS,
                # A file's name its source does not end in (`Chunk.file_name`), for its context.
                "file_name": LABELS,
            },
        },
    }


def index_name_for(prefix: str, model: str, dimension: int) -> str:
    """The index of one model's vectors of one size: `<prefix>-<model slug>-<dimension>`."""
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    name = f"{prefix}-{slug}-{dimension}"
    if not slug or len(name.encode()) > _MAX_INDEX_NAME:
        raise ConfigError(
            f"embedding model {model!r} gives no usable index name ({name!r}): "
            "use a model id with letters or digits, and a shorter index prefix"
        )
    return name
