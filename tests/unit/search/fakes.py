"""Test doubles for the dense side: a deterministic embedder that counts calls, and the real model."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
import pytest

from foldgate.search.embed import (
    DEFAULT_MODEL_NAME,
    EmbeddingError,
    LocalEmbedder,
    Vector,
    default_model_dirs,
)


class FakeEmbedder:
    """Bag-of-words vectors (hashed buckets): similar wording → similar vectors, no model needed.

    ``vectors`` pins exact vectors for given texts; ``fail`` decides which texts raise.
    """

    name = "fake"

    def __init__(
        self,
        dim: int = 32,
        *,
        model_id: str = "fake-v1",
        vectors: dict[str, Vector] | None = None,
        fail: Callable[[str], bool] | None = None,
    ) -> None:
        self.dim = dim
        self.model_id = model_id
        self.calls: list[str] = []
        self._vectors = vectors or {}
        self._fail = fail

    def encode(self, text: str) -> Vector:
        self.calls.append(text)
        if self._fail is not None and self._fail(text):
            raise EmbeddingError(f"fake failure for {text!r}")
        if text in self._vectors:
            vec = np.asarray(self._vectors[text], dtype=np.float32)
            return vec / np.float32(np.linalg.norm(vec))
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in text.lower().replace(":", " ").split():
            bucket = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little") % self.dim
            vec[bucket] += 1.0
        vec[0] += 0.01  # never the zero vector
        return vec / np.float32(np.linalg.norm(vec))


def local_model() -> LocalEmbedder:
    """The real int8 model built by ``make model``; skips the test with a reason when it is absent."""
    for d in default_model_dirs():
        if (d / "model.onnx").is_file():
            return LocalEmbedder(d)
    pytest.skip(f"the local model {DEFAULT_MODEL_NAME} is not built: run `make model` (make test does)")
