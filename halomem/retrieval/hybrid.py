"""The reference hybrid ranking over a ScopedView: BM25 + pgvector cosine, 50/50 min-max merge over
the memories with evidence (retrieval.evidence).

Used by the baseline driver and available to any cartridge that wants the referee's ranking as a
starting point. Reads only through the view it is handed.
"""
from __future__ import annotations

from ..types import RetrieverQuery, ScoredRef, estimate_tokens, fit_budget, rank_key
from .evidence import evidenced, only, similarity_floor
from .merge import hybrid_merge
from .pool import gather_pool


def hybrid_rank(q: RetrieverQuery, *, candidate_limit: int | None = None, fit: bool = True) -> list[ScoredRef]:
    if q.k <= 0:
        return []
    pool = gather_pool(q.view, q.query, max(q.k * 3, 20), candidate_limit)
    allowed = pool.content
    lexical = pool.lexical_scores(q.query)
    merged = hybrid_merge([(pool.cosine, 0.5), (lexical, 0.5)])
    # every ref with evidence ranks, even the one min-max put at 0; one that matched nothing never fills k
    merged = only(merged, evidenced(pool.cosine, lexical, similarity_floor(q.view)))
    scored = sorted((ScoredRef(ref, "L2", ref, s, allowed[ref], estimate_tokens(allowed[ref]))
                     for ref, s in merged.items()), key=rank_key)
    return fit_budget(scored, q.k, q.token_budget) if fit else scored[: q.k]
