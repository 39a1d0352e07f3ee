"""recency: the memories sharing the most words with the query, the newest first among equals.

DRIVER BOUNDARY: imports only halomem.types (the view's candidates() are newest first)."""
from __future__ import annotations

import re

from halomem.types import Capabilities, RetrieverQuery, ScoredRef, estimate_tokens, fit_budget

_WORD = re.compile(r"[a-z0-9]+")


class RecencyDriver:
    name = "recency"

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=False, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        if q.k <= 0:
            return []
        wanted = set(_WORD.findall(q.query.lower()))
        shared = [(len(wanted & set(_WORD.findall(c.content.lower()))), age, c)
                  for age, c in enumerate(q.view.candidates(200))]  # newest first: age 0 is the newest
        ranked = sorted((s for s in shared if s[0]), key=lambda s: (-s[0], s[1]))
        scored = [ScoredRef(c.ref, "L2", c.ref, n / len(wanted) / (1 + 0.01 * age), c.content,
                            estimate_tokens(c.content)) for n, age, c in ranked]
        return fit_budget(scored, q.k, q.token_budget)
