"""Both lanes on an absolute scale, so neither is stretched by min-max over a small pool.

Min-max gives a pool's best lexical match 1.0 whatever it matched: in a store of one-line facts, a
question that shares one common word with an unrelated memory lifts that memory to the lexical
lane's top, above the paraphrase the vector lane found. Here a memory's lexical score measures its BM25 against the query's
term evidence M, the sum of the query terms' IDF (what a memory holding each non-stopword query
term once at average length scores; every term counts, matched or not): (s / (s + M))^2, 0.25 for
a memory that scores M, never saturating (a long document holding every term several times still
ranks above one holding them once), and squared so that one shared word among five weighs little.
Its cosine is measured from the embedder's similarity floor up (0 at the floor, 1 at an identical
text). A weak partial match then stays weak, and a strong one strong, on every collection alike.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..embed.tokenize import STOPWORDS, terms
from .bm25 import analyze, idf


def query_mass(view: Any, query: str, pool_content: Mapping[str, str], host_scored: bool) -> float:
    """The sum of the query terms' IDF on the statistics the lexical lane was scored with: the
    corpus's (view.corpus_stats) when the host scored it, the pool's when bm25_scores did."""
    if host_scored and callable(getattr(view, "corpus_stats", None)):
        words = list(dict.fromkeys(t for t in terms(query) if t not in STOPWORDS))
        stats = view.corpus_stats(words)
        return sum(idf(stats.documents, df) for df in stats.document_frequency.values())
    wanted = set(analyze(query))
    docs = [set(analyze(text)) for text in pool_content.values()]
    return sum(idf(len(docs), sum(1 for d in docs if term in d)) for term in wanted)


LEXICAL_POWER = 2.0  # the shipped exponent; others only for the candidates of docs/bench/fusion.md


def lexical_share(lexical: Mapping[str, float], mass: float, power: float = LEXICAL_POWER) -> dict[str, float]:
    """(s / (s + M)) ** power."""
    if mass <= 0:
        return {ref: (1.0 if s > 0 else 0.0) for ref, s in lexical.items()}
    return {ref: (s / (s + mass)) ** power if s > 0 else 0.0 for ref, s in lexical.items()}


def cosine_above_floor(cosine: Mapping[str, float], floor: float | None) -> dict[str, float]:
    low = min(max(floor or 0.0, 0.0), 0.99)
    return {ref: max(0.0, (c - low) / (1.0 - low)) for ref, c in cosine.items()}
