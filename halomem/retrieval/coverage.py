"""Query-term coverage: the share of a query's meaningful words a memory holds (the keyword
driver's measure, the seed's worked example), and of the query's adjacent word pairs it holds
adjacent, as a lane fusion can weigh beside BM25's IDF share.

Unweighted on purpose: BM25's share rewards the rarest words, coverage rewards holding all of
them, which is what a query that names several constraints ("X, not Y, in Z") asks for. The pairs
are term proximity (the sequential dependence model's ordered bigrams, Metzler & Croft 2005): a
memory that states the query's words in the query's order ("express high levels of MHC class II")
says what the query asks, where another holding the same words apart, or a flipped copy of the
statement, is only about it.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from ..embed.tokenize import STOPWORDS, term_set, terms

PAIR_SHARE = 0.5  # of the lane: the pairs' share beside the words' (docs/bench/fusion.md)


@lru_cache(maxsize=1 << 13)
def word_pairs(text: str) -> frozenset[tuple[str, str]]:
    """Adjacent pairs of ``text``'s meaningful words, stop words skipped ("levels of MHC": levels,
    mhc). Cached like term_set: a namespace's pools repeat their memories from query to query."""
    words = [t for t in terms(text) if t not in STOPWORDS]
    return frozenset(zip(words, words[1:]))


def coverage_scores(query: str, content: Mapping[str, str], pair_share: float = PAIR_SHARE) -> dict[str, float]:
    """Each memory's share (0..1) of the query's distinct words that are not stop words, blended
    with its share of the query's adjacent word pairs (``pair_share`` of the score; a query of one
    word has no pairs and is scored by its word)."""
    wanted = set(terms(query)) - STOPWORDS
    if not wanted:
        return {}
    pairs = word_pairs(query) if pair_share else frozenset()
    if not pairs:
        return {ref: len(wanted & term_set(text)) / len(wanted) for ref, text in content.items()}
    return {ref: (1 - pair_share) * len(wanted & term_set(text)) / len(wanted)
            + pair_share * len(pairs & word_pairs(text)) / len(pairs) for ref, text in content.items()}
