"""The OpenSearch index: k-NN (faiss HNSW, inner product) and BM25 over chunks, via opensearch-py.

One adapter serves managed domains and Serverless vector collections. Serverless accepts no
custom `_id` and has no `_delete_by_query`, so there chunks get server-made ids, and stale or
duplicated chunks are found with a search and removed with bulk deletes by `_id`. Every
transport failure becomes `SearchIndexUnavailableError` (retry later) or `SearchIndexError`.

index.py is the adapter (`OpenSearchIndex`); mapping.py what the index holds, queries.py the
searches it sends, bulk.py its bulk bodies, failures.py its errors, client.py the client.
"""

from docchat.adapters.opensearch_index.client import client_for
from docchat.adapters.opensearch_index.index import OpenSearchIndex
from docchat.adapters.opensearch_index.mapping import CONTEXTUAL_FIELD, index_body

__all__ = ["CONTEXTUAL_FIELD", "OpenSearchIndex", "client_for", "index_body"]
