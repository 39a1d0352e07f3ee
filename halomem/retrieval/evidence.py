"""Which memories a shipped driver may return: those with evidence of matching the query.

A memory matched nothing when no query term is in it (no lexical score) and its cosine is below the
view's similarity floor (the cosine its embedder gives unrelated texts: embed.calibrate). Such a
memory is not returned to fill k: an agent reads fewer hits rather than unrelated ones. On a host
without similarity_floor() every vector hit counts as evidence (the behaviour before the floor).
"""
from __future__ import annotations

from typing import Any, Mapping


def similarity_floor(view: Any) -> float | None:
    floor = getattr(view, "similarity_floor", None)
    return float(floor()) if callable(floor) else None


def evidenced(cosine: Mapping[str, float], lexical: Mapping[str, float], floor: float | None) -> set[str]:
    """Refs with a lexical score above 0, or a cosine at or above ``floor``."""
    keep = {ref for ref, score in lexical.items() if score > 0}
    keep.update(ref for ref, c in cosine.items() if floor is None or c >= floor)
    return keep


def only(scores: Mapping[str, float], refs: set[str]) -> dict[str, float]:
    return {ref: s for ref, s in scores.items() if ref in refs}
