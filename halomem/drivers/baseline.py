"""baseline: the referee control lane. pgvector cosine + BM25, 50/50 min-max merge, plus L3 concepts (fused by rank).

DRIVER BOUNDARY: imports only halomem.types and halomem.retrieval. The view is the whole world.
"""
from __future__ import annotations

from halomem.retrieval.concepts import with_concepts
from halomem.retrieval.hybrid import hybrid_rank
from halomem.types import Capabilities, RetrieverQuery, ScoredRef, fit_budget


class BaselineDriver:
    name = "baseline"

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=False, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        if q.k <= 0:
            return []
        memories = hybrid_rank(q, fit=False)  # L2 rows, best first
        return fit_budget(with_concepts(memories, q.view, q.query, q.k), q.k, q.token_budget)
