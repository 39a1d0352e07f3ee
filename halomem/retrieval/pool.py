"""Gathering what a driver ranks: the lexical pool and the vector lane, both from the view."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..types import ScopedView
from .bm25 import bm25_scores

CANDIDATE_LIMIT = 500
# A host that ranks lexically (BM25 over the corpus) puts the best rows first: its top 100 carry the
# lane (LoCoMo: R@10 unchanged or better than 500, as min-max no longer stretches over a long tail)
# and cost a fifth of the transfer. Without it the pool is the newest rows, so it must be wider.
RANKED_LIMIT = 100


@dataclass
class Pool:
    """Everything one plan() call may rank: admitted refs with their content, cosine, source and
    place in the source."""

    content: dict[str, str] = field(default_factory=dict)
    cosine: dict[str, float] = field(default_factory=dict)  # only the vector lane's rows
    source: dict[str, str | None] = field(default_factory=dict)
    position: dict[str, int | None] = field(default_factory=dict)
    bm25: dict[str, float] | None = None  # the host's corpus-level BM25 of the lexical rows, if it sent it

    def lexical_scores(self, query: str, **bm25_params: float) -> dict[str, float]:
        """The lexical lane: the host's BM25 when it scored its candidates (corpus statistics, no
        text re-read), else BM25 computed here over the pool (statistics from the pool only)."""
        if self.bm25 is not None:
            return self.bm25
        return bm25_scores(query, self.content, **bm25_params)


def gather_pool(view: ScopedView, query: str, vector_k: int, candidate_limit: int | None = None,
                embedding: Sequence[float] | None = None) -> Pool:
    """The lexical pool plus the vector lane.

    The pool comes from lexical_candidates when the host offers it (query-selective over the
    full corpus), else from the bounded candidates() window.
    """
    lexical = getattr(view, "lexical_candidates", None)
    pool = Pool()
    if lexical:
        found = lexical(query, candidate_limit or RANKED_LIMIT)
    else:
        found = view.candidates(candidate_limit or CANDIDATE_LIMIT)
    for c in found:
        pool.content[c.ref] = c.content
        pool.source[c.ref] = getattr(c, "source", None)  # hosts built against v1 may not send it
        pool.position[c.ref] = getattr(c, "position", None)  # nor this, before schema v6
    if lexical and all(getattr(c, "score", None) is not None for c in found):
        pool.bm25 = {c.ref: float(c.score) for c in found}
    if embedding is None:
        [embedding] = view.embed([query])
    for hit in view.vector_search(embedding, vector_k):
        pool.content.setdefault(hit.ref, hit.content)
        pool.source.setdefault(hit.ref, getattr(hit, "source", None))
        pool.position.setdefault(hit.ref, getattr(hit, "position", None))
        pool.cosine[hit.ref] = max(pool.cosine.get(hit.ref, 0.0), hit.score)
    return pool


def gather(view: ScopedView, query: str, vector_k: int, candidate_limit: int | None = None,
           embedding: Sequence[float] | None = None) -> tuple[dict[str, str], dict[str, float]]:
    """(ref -> content of every admitted row, ref -> cosine of the vector lane's rows)."""
    pool = gather_pool(view, query, vector_k, candidate_limit, embedding)
    return pool.content, pool.cosine
