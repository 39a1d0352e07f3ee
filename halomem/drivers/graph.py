"""graph: entity-mention fan-out through entity_facts at two hops.

Score = 0.5 * cosine + 0.3 * hop proximity (hop 1: 1.0, hop 2: 0.5) + 0.2 * BM25 (min-max), over the
memories with evidence: a query term, an entity fact, or a cosine at or above the view's similarity
floor (retrieval.evidence).
DRIVER BOUNDARY: imports only halomem.types and halomem.retrieval.
"""
from __future__ import annotations

from halomem.retrieval import min_max
from halomem.retrieval.evidence import evidenced, similarity_floor
from halomem.retrieval.pool import gather_pool
from halomem.types import Capabilities, RetrieverQuery, ScoredRef, estimate_tokens, fit_budget, rank_key

HOP_PROXIMITY = {1: 1.0, 2: 0.5}


class GraphDriver:
    name = "graph"

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=True, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        if q.k <= 0:
            return []
        pool = gather_pool(q.view, q.query, max(q.k * 3, 20))
        allowed, cosine = pool.content, pool.cosine
        proximity: dict[str, float] = {}
        for fact in q.view.entity_facts(q.query, 2):
            allowed.setdefault(fact.ref, fact.content)
            proximity[fact.ref] = max(proximity.get(fact.ref, 0.0), HOP_PROXIMITY.get(fact.hop, 0.0))
        lexical = pool.lexical_scores(q.query)
        bm25 = min_max(lexical)  # entity facts outside the lexical pool score 0 here
        # a memory that matched nothing (no term, no entity, cosine under the floor) never fills k
        keep = evidenced(cosine, lexical, similarity_floor(q.view)) | set(proximity)
        scored = []
        for ref, content in allowed.items():
            if ref not in keep:
                continue
            score = (0.5 * max(0.0, cosine.get(ref, 0.0)) + 0.3 * proximity.get(ref, 0.0)
                     + 0.2 * bm25.get(ref, 0.0))
            if score > 0:
                scored.append(ScoredRef(ref, "L2", ref, score, content, estimate_tokens(content)))
        return fit_budget(sorted(scored, key=rank_key), q.k, q.token_budget)
