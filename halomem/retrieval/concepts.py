"""Placing L3 concepts in an L2 ranking.

A driver's L2 scores are relative (min-max over this query's pool: the best memory is near 1.0
whatever it says), a concept's score from the view is absolute (0.5 x cosine + 0.5 x the share of
the query's weighted lexemes it holds). Comparing the two numbers buried a concept that answers
the question under twenty memories that merely mention its words. Instead the two rankings are
fused by reciprocal rank, and only concepts that are strong matches on their own scale take part:
a concept that clearly answers the question sits beside the best memory, an unrelated one never
appears. On a tie of fused scores (a concept and a memory at the same rank of their lists) the
concept goes first: it is the organisation's curated answer, the memory one mention.
"""
from __future__ import annotations

from typing import Sequence

from ..types import ScopedView, ScoredRef, rank_key
from .merge import reciprocal_rank_fusion

STRONG_CONCEPT = 0.5
CONCEPT_TIE_BREAK = 1e-9  # far below any difference of two reciprocal ranks (about 1e-4 at rank 100)


def with_concepts(memories: Sequence[ScoredRef], view: ScopedView, query: str, k: int) -> list[ScoredRef]:
    """``memories`` (best first) with the strong concepts fused in by rank; scores rescaled 0..1."""
    concepts = [c for c in view.concepts(query, k) if c.score >= STRONG_CONCEPT]
    if not concepts:
        return list(memories)
    ranked = sorted(concepts, key=rank_key)
    fused = reciprocal_rank_fusion([[m.ref for m in memories], [c.ref for c in ranked]])
    for c in ranked:
        fused[c.ref] += CONCEPT_TIE_BREAK
    top = max(fused.values())
    by_ref = {h.ref: h for h in (*memories, *ranked)}
    return sorted((ScoredRef(h.id, h.tier, h.ref, fused[h.ref] / top, h.content, h.token_estimate)
                   for h in by_ref.values()), key=rank_key)
