"""The offline embedder: real model, verified files, order kept across length-sorted batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from docchat.adapters import embedding, local_embedder
from docchat.adapters.embedding import token_budget_batches
from docchat.adapters.local_embedder import LocalEmbedder
from docchat.errors import ModelFileError


def test_local_embedder_puts_paraphrases_closer_than_unrelated_text() -> None:
    embedder = LocalEmbedder(batch_size=2)

    vectors = embedder.embed_documents(
        [
            "The cat sits on the mat.",
            "Stock markets fell sharply today.",
            "A kitten rests on a rug.",
        ]
    )

    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[2] > 0.4 > vectors[0] @ vectors[1]


def test_local_embedder_keeps_input_order_across_batches() -> None:
    texts = ["short", "a much longer sentence about rivers and bridges", "mid length text", "x"]
    embedder = LocalEmbedder(batch_size=2)
    done: list[int] = []

    together = embedder.embed_documents(texts, on_batch=done.append)
    alone = np.stack([embedder.embed_query(t) for t in texts])

    assert np.allclose(together, alone, atol=1e-4)
    assert done == [2, 2]


def test_a_query_is_embedded_once_while_it_is_among_the_last_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A question's hybrid search and its sentence reranker each ask for the query's vector.
    embedder = LocalEmbedder()
    runs: list[list[str]] = []
    embed = embedder._embed_batch
    monkeypatch.setattr(embedder, "_embed_batch", lambda texts: runs.append(texts) or embed(texts))
    monkeypatch.setattr(embedding, "QUERIES_KEPT", 2)

    first = embedder.embed_query("When does the ferry leave?")
    again = embedder.embed_query("When does the ferry leave?")
    embedder.embed_query("Who built the bridge?")
    embedder.embed_query("What does the museum hold?")  # the ferry is no longer among the last 2
    embedder.embed_query("When does the ferry leave?")

    assert again is first and not first.flags.writeable
    assert np.allclose(
        first, embedder.embed_documents(["When does the ferry leave?"])[0], atol=1e-5
    )
    assert [texts[0] for texts in runs[:4]] == [
        "When does the ferry leave?",
        "Who built the bridge?",
        "What does the museum hold?",
        "When does the ferry leave?",
    ]
    assert np.allclose(
        first, embedder.embed_documents(["When does the ferry leave?"])[0], atol=1e-5
    )


def test_token_budget_batches_group_similar_lengths_within_the_budget() -> None:
    # Texts of 4, 1, 3, 2 tokens: two per batch, and at most 6 tokens with padding
    assert token_budget_batches([4, 1, 3, 2], 2, 100) == [[1, 3], [2, 0]]
    assert token_budget_batches([4, 1, 3, 2], 4, 6) == [[1, 3], [2], [0]]
    assert token_budget_batches([9, 1], 4, 6) == [[1], [0]]  # one text alone may pass it


def test_local_embedder_refuses_a_model_file_with_the_wrong_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(local_embedder, "packaged_file", lambda package, relative: fake)

    with pytest.raises(
        ModelFileError, match=r"SHA-256 [0-9a-f]{64}, expected [0-9a-f]{64}: the file is corrupt"
    ):
        LocalEmbedder().embed_query("hello")


def test_local_embedder_names_the_install_step_when_the_model_is_missing() -> None:
    with pytest.raises(
        ModelFileError, match="'no_such_model_pkg' is not installed: install the local"
    ):
        local_embedder.packaged_file("no_such_model_pkg", "model.onnx")


def test_local_embedder_learns_lengths_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # A whole document's texts in one tokenizer call held them all, padded, at once (issue 44).
    embedder = LocalEmbedder(batch_size=2)  # its model batches stay under the slice too
    tokenizer = embedder._tokenizer
    calls: list[int] = []

    def counted(texts: list[str]) -> list[object]:
        calls.append(len(texts))
        return list(tokenizer.encode_batch(texts))

    monkeypatch.setattr(local_embedder, "LENGTH_SLICE", 3, raising=False)
    texts = [f"sentence number {n} about rivers" + " and bridges" * n for n in range(7)]
    expected = np.stack([embedder.embed_query(t) for t in texts])
    monkeypatch.setitem(embedder.__dict__, "_tokenizer", _Counting(tokenizer, counted))

    vectors = embedder.embed_documents(texts)

    assert max(calls) <= 3
    assert np.allclose(vectors, expected, atol=1e-4)


class _Counting:
    """A tokenizer's stand-in whose encode_batch is `encode_batch`."""

    def __init__(self, tokenizer: object, encode_batch: object) -> None:
        self.tokenizer = tokenizer
        self.encode_batch = encode_batch
