"""The reference hybrid ranking over a ScopedView: BM25 + pgvector cosine, 50/50 min-max merge.

Used by the baseline driver and available to any cartridge that wants the referee's ranking as a
starting point. Reads only through the view it is handed.
"""
from __future__ import annotations

from ..types import RetrieverQuery, ScoredRef, estimate_tokens, fit_budget, rank_key
from .bm25 import bm25_scores
from .merge import hybrid_merge

CANDIDATE_LIMIT = 500


def hybrid_rank(q: RetrieverQuery, *, candidate_limit: int = CANDIDATE_LIMIT, fit: bool = True) -> list[ScoredRef]:
    if q.k <= 0:
        return []
    view = q.view
    lexical = getattr(view, "lexical_candidates", None)
    pool = lexical(q.query, candidate_limit) if lexical else view.candidates(candidate_limit)
    allowed = {c.ref: c.content for c in pool}
    [embedding] = view.embed([q.query])
    cosine: dict[str, float] = {}
    for hit in view.vector_search(embedding, max(q.k * 3, 20)):
        allowed.setdefault(hit.ref, hit.content)
        cosine[hit.ref] = max(cosine.get(hit.ref, 0.0), hit.score)
    merged = hybrid_merge([(cosine, 0.5), (bm25_scores(q.query, allowed), 0.5)])
    # every ref with evidence in either lane ranks, even the one min-max put at 0
    scored = sorted((ScoredRef(ref, "L2", ref, s, allowed[ref], estimate_tokens(allowed[ref]))
                     for ref, s in merged.items()), key=rank_key)
    return fit_budget(scored, q.k, q.token_budget) if fit else scored[: q.k]
