"""Gathering what a driver ranks: the lexical pool and the vector lane, both from the view."""
from __future__ import annotations

from typing import Sequence

from ..types import ScopedView

CANDIDATE_LIMIT = 500


def gather(view: ScopedView, query: str, vector_k: int, candidate_limit: int = CANDIDATE_LIMIT,
           embedding: Sequence[float] | None = None) -> tuple[dict[str, str], dict[str, float]]:
    """(ref -> content of every admitted row, ref -> cosine of the vector lane's rows).

    The pool comes from lexical_candidates when the host offers it (query-selective over the
    full corpus), else from the bounded candidates() window.
    """
    lexical = getattr(view, "lexical_candidates", None)
    pool = lexical(query, candidate_limit) if lexical else view.candidates(candidate_limit)
    allowed = {c.ref: c.content for c in pool}
    if embedding is None:
        [embedding] = view.embed([query])
    cosine: dict[str, float] = {}
    for hit in view.vector_search(embedding, vector_k):
        allowed.setdefault(hit.ref, hit.content)
        cosine[hit.ref] = max(cosine.get(hit.ref, 0.0), hit.score)
    return allowed, cosine
