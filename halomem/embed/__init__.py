"""Embedders, cosine similarity and tokenization: pure helpers a driver may import.

``cosine`` and ``cosine_many`` need numpy and are imported on first use, so the search path
(hash embedder, ranking in the database) starts without it.
"""
from typing import Any

from .embedders import Embedder, HashEmbedder
from .registry import DEFAULT_SPEC, EmbedderOptions, get_embedder
from .tokenize import STOPWORDS, stem, terms, word_boundary_pattern

__all__ = ["Embedder", "HashEmbedder", "EmbedderOptions", "DEFAULT_SPEC", "get_embedder", "cosine", "cosine_many",
           "terms", "stem", "STOPWORDS", "word_boundary_pattern"]


def __getattr__(name: str) -> Any:
    if name in ("cosine", "cosine_many"):
        from importlib import import_module

        return getattr(import_module(f"{__name__}.similarity"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
