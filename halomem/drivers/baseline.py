"""baseline: the referee control lane. pgvector cosine + BM25, 50/50 min-max merge.

DRIVER BOUNDARY: imports only halomem.types, halomem.retrieval. The view is the whole world.
"""
from __future__ import annotations

from halomem.retrieval import bm25_scores, hybrid_merge
from halomem.types import Capabilities, RetrieverQuery, ScoredRef, estimate_tokens, fit_budget, rank_key

CANDIDATE_LIMIT = 500


class BaselineDriver:
    name = "baseline"

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=False, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        if q.k <= 0:
            return []
        view = q.view
        lexical = getattr(view, "lexical_candidates", None)
        pool = lexical(q.query, CANDIDATE_LIMIT) if lexical else view.candidates(CANDIDATE_LIMIT)
        allowed = {c.ref: c.content for c in pool}
        [embedding] = view.embed([q.query])
        cosine: dict[str, float] = {}
        for hit in view.vector_search(embedding, max(q.k * 3, 20)):
            allowed.setdefault(hit.ref, hit.content)
            cosine[hit.ref] = max(cosine.get(hit.ref, 0.0), hit.score)
        merged = hybrid_merge([(cosine, 0.5), (bm25_scores(q.query, allowed), 0.5)])
        # every ref with evidence in either lane ranks, even the one min-max put at 0
        scored = [ScoredRef(ref, "L2", ref, s, allowed[ref], estimate_tokens(allowed[ref]))
                  for ref, s in merged.items()]
        scored += view.concepts(q.query, q.k)
        return fit_budget(sorted(scored, key=rank_key), q.k, q.token_budget)
