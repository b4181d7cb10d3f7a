"""Sources a data directory syncs its documents from (issue 47): configured once (store.py),
crawled (crawl.py) and synced into the index through the local runner (sync.py)."""
