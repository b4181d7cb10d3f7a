"""The index's contract: test mixins (chunk_store.py, catalog.py) that every adapter of
ports.ChunkStore and ports.DocumentCatalog runs, each over its own fixture (test_*.py)."""

import pytest

# The mixins' asserts say what differed, as a test module's do.
pytest.register_assert_rewrite("tests.contract.catalog", "tests.contract.chunk_store")
