"""A Ctrl-C that lands while the embedding model's C extension loads stops the run (issue 44):
it came out as ImportError("initialization failed") from the KeyboardInterrupt, so the file was
recorded FAILED and the CLI printed a traceback instead of "interrupted" (test_ctrl_c[1.5])."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.ingest.local import ingest_bytes
from tests.conftest import WordEmbedder
from tests.pdfgen import make_pdf


class InterruptedWhileLoading(WordEmbedder):
    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> np.ndarray:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc


def test_a_ctrl_c_while_the_model_loads_stops_the_run_and_fails_no_file(tmp_path: Path) -> None:
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)

    with pytest.raises(KeyboardInterrupt):
        ingest_bytes(
            make_pdf([[("body", "Ferries leave the harbour every hour.")]]),
            source="/docs/ferries.pdf",
            index=index,
            catalog=index,
            embedder=InterruptedWhileLoading(),
            settings=Settings(data_dir=tmp_path),
        )

    assert [r.status.value for r in index.documents()] != ["FAILED"]
    index.close()
