"""Embedders, cosine similarity and tokenization: pure helpers a driver may import."""
from .cosine import cosine, cosine_many
from .embedders import Embedder, HashEmbedder, get_embedder
from .tokenize import STOPWORDS, stem, terms, word_boundary_pattern

__all__ = ["Embedder", "HashEmbedder", "get_embedder", "cosine", "cosine_many", "terms", "stem",
           "STOPWORDS", "word_boundary_pattern"]
