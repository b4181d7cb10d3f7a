"""The embedded index of local mode: documents and chunks of one embedding model in a single
SQLite file, searched by k-NN and BM25 over segments saved beside it (`<stem>.segments/`).

A write touches only its documents' rows; opening maps the segments and reads nothing else; a
search applies the writes made since it last looked (by this process or another) and no more.

store.py        the connection: writable or read-only, errors that say what to do, transactions
schema.py       the tables, and the ordered migrations that bring an older file up to date
catalog.py      document records (local mode's registry); a copy of the same bytes is a document
chunks.py       chunk rows with their vectors and BM25 terms
pages.py        page text and model-written notes kept beside the chunks
changes.py      what each write records, so that every open index catches up incrementally
segment.py      a fixed set of rows held column by column: vectors, lengths, postings
graph.py        the HNSW graph (usearch) that proposes candidates in a large segment
live.py         what one open index holds: the current view of the segments, the records
maintenance.py  flushing new rows into segments and merging them
search.py       k-NN and BM25 over a view of the segments
wanted.py       which rows a search's filters (documents, versions) keep
bm25.py         FTS5's analysis and scores
index.py        `SqliteIndex`, the ports over all of these
"""

from docchat.adapters.sqlite_index.index import SqliteIndex

__all__ = ["SqliteIndex"]
