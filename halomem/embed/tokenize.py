"""Tokenization shared by the hash embedder, BM25 and entity matching."""
from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"[^\W_]+")  # runs of letters and digits, any script; never tsquery syntax

STOPWORDS = frozenset(
    "a an and are as at be but by did do does for from had has have he her his how i if in into is it its"
    " me my of on or our she so than that the their them then there these they this to was we were what"
    " when where which who whom why will with would you your".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased runs of letters and digits (any script), in order (duplicates kept)."""
    return _TOKEN.findall(text.lower())


@lru_cache(maxsize=1 << 13)
def term_set(text: str) -> frozenset[str]:
    """The distinct terms of ``text``. Cached: a namespace's pools repeat their memories from query
    to query, and reading each pooled memory's words was most of what coverage cost (1.5 ms a
    search on LoCoMo)."""
    return frozenset(terms(text))


@lru_cache(maxsize=1 << 16)
def stem(term: str) -> str:
    """A light suffix stripper: enough to make 'burns' meet 'burn' without a stemming library.

    Cached: BM25 stems every token of a 500-row pool on each query, and vocabularies repeat.
    """
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "es", "ed", "ly", "s"):
        if len(term) > len(suffix) + 2 and term.endswith(suffix):
            base = term[: -len(suffix)]
            return base + "y" if suffix in ("ies", "ied") else base
    return term


@lru_cache(maxsize=4096)
def word_boundary_pattern(name: str) -> re.Pattern[str]:
    """Case-insensitive match of ``name`` as a whole word: 'Ann' matches 'Ann,' but not 'planning'."""
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)", re.IGNORECASE)
