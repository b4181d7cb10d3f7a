"""The embedded index of local mode: documents, chunks and vectors of one embedding model in a
single SQLite file, searched by exact k-NN and BM25 in numpy.

store.py     the connection: writable or read-only, errors that say what to do, transactions
schema.py    the tables, and the ordered migrations that bring an older file up to date
catalog.py   document records (local mode's registry) and aliases of identical files
chunks.py    chunk rows with their vectors and BM25 terms
pages.py     page text and model-written notes kept beside the chunks
bm25.py      FTS5's analysis and scores over numpy postings
search.py    the vectors and postings held in memory, and the two searches over them
index.py     `SqliteIndex`, the ports over all of these
"""

from docchat.adapters.sqlite_index.index import SqliteIndex

__all__ = ["SqliteIndex"]
