"""keyword: the seed's worked example. 0.6 * cosine + 0.4 * query-term coverage, over the memories
that matched something (a query term, or a cosine at or above the view's similarity floor).

Coverage counts the query's words that carry meaning: "what", "is", "the" are in nearly every
memory, so a query of a topic only a sibling holds would otherwise cover a little of every row and
pad k with them.

DRIVER BOUNDARY: imports only halomem.types, the stop words of halomem.embed and the evidence rule of
halomem.retrieval. Coverage is computed here rather than with the kernel's BM25, to show an
independent scorer.
"""
from __future__ import annotations

import re

from halomem.embed.tokenize import STOPWORDS
from halomem.retrieval.evidence import vector_evidence
from halomem.types import Capabilities, RetrieverQuery, ScoredRef, estimate_tokens, fit_budget, rank_key

VECTOR_WEIGHT = 0.6
COVERAGE_WEIGHT = 0.4
CANDIDATE_LIMIT = 500  # the newest rows, when the host cannot preselect by the query's words
LEXICAL_LIMIT = 100  # the host's best lexical matches
_TERM = re.compile(r"[a-z0-9]+")


def terms(text: str) -> set[str]:
    return set(_TERM.findall(text.lower()))


def content_terms(text: str) -> set[str]:
    """A query's words that carry meaning (stop words left out)."""
    return terms(text) - STOPWORDS


def coverage(query_terms: set[str], content: str) -> float:
    """Fraction of distinct query terms that appear in the document."""
    if not query_terms:
        return 0.0
    return len(query_terms & terms(content)) / len(query_terms)


class KeywordDriver:
    name = "keyword"

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=False, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        if q.k <= 0:
            return []
        view = q.view
        # 1. Everything this driver may see comes from the view.
        lexical = getattr(view, "lexical_candidates", None)
        pool = lexical(q.query, LEXICAL_LIMIT) if lexical else view.candidates(CANDIDATE_LIMIT)
        allowed = {c.ref: c.content for c in pool}
        # 2. Vector lane, over the same ACL-scoped corpus.
        [embedding] = view.embed([q.query])
        cosine: dict[str, float] = {}
        for hit in view.vector_search(embedding, max(q.k * 3, 15)):
            allowed.setdefault(hit.ref, hit.content)
            cosine[hit.ref] = max(cosine.get(hit.ref, 0.0), hit.score)
        # 3. Score every admitted ref that matched something: a query term, or a cosine at or above the
        #    similarity the embedder gives unrelated texts (a host may not say: then any cosine counts).
        floor = view.similarity_floor() if callable(getattr(view, "similarity_floor", None)) else None
        query_terms = content_terms(q.query)
        scored = []
        for ref, content in allowed.items():
            covered = coverage(query_terms, content)
            if not covered and (ref not in cosine or not vector_evidence(cosine[ref], floor)):
                continue  # matched nothing: never returned to fill k
            score = VECTOR_WEIGHT * max(0.0, cosine.get(ref, 0.0)) + COVERAGE_WEIGHT * covered
            if score > 0:
                scored.append(ScoredRef(ref, "L2", ref, score, content, estimate_tokens(content)))
        # 4. Deterministic order (score desc, ref asc); 5. budget discipline, top hit survives.
        return fit_budget(sorted(scored, key=rank_key), q.k, q.token_budget)
