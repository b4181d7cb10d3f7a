"""Sources a data directory syncs its documents from (issue 47): configured once (store.py),
crawled (crawl.py) and synced into the index through the local runner (sync.py); on the stack,
defined in the artifacts bucket (stack.py) and synced into the documents bucket (stack_sync.py).
All but sync.py are in the Lambda layer."""
