"""graph: entity-mention fan-out through entity_facts at two hops.

Score = 0.5 * cosine + 0.3 * hop proximity (hop 1: 1.0, hop 2: 0.5) + 0.2 * BM25 (min-max).
DRIVER BOUNDARY: imports only halomem.types and halomem.retrieval.
"""
from __future__ import annotations

from halomem.retrieval import bm25_scores, min_max
from halomem.types import Capabilities, RetrieverQuery, ScoredRef, estimate_tokens, fit_budget, rank_key

CANDIDATE_LIMIT = 500
HOP_PROXIMITY = {1: 1.0, 2: 0.5}


class GraphDriver:
    name = "graph"

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=True, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        if q.k <= 0:
            return []
        view = q.view
        lexical = getattr(view, "lexical_candidates", None)
        pool = lexical(q.query, CANDIDATE_LIMIT) if lexical else view.candidates(CANDIDATE_LIMIT)
        allowed = {c.ref: c.content for c in pool}
        proximity: dict[str, float] = {}
        for fact in view.entity_facts(q.query, 2):
            allowed.setdefault(fact.ref, fact.content)
            proximity[fact.ref] = max(proximity.get(fact.ref, 0.0), HOP_PROXIMITY.get(fact.hop, 0.0))
        [embedding] = view.embed([q.query])
        cosine: dict[str, float] = {}
        for hit in view.vector_search(embedding, max(q.k * 3, 20)):
            allowed.setdefault(hit.ref, hit.content)
            cosine[hit.ref] = max(cosine.get(hit.ref, 0.0), hit.score)
        bm25 = min_max(bm25_scores(q.query, allowed))
        scored = []
        for ref, content in allowed.items():
            score = (0.5 * max(0.0, cosine.get(ref, 0.0)) + 0.3 * proximity.get(ref, 0.0)
                     + 0.2 * bm25.get(ref, 0.0))
            if score > 0:
                scored.append(ScoredRef(ref, "L2", ref, score, content, estimate_tokens(content)))
        return fit_budget(sorted(scored, key=rank_key), q.k, q.token_budget)
