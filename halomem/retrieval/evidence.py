"""Which memories a shipped driver may return: those with evidence of matching the query.

A memory matched nothing when no query term is in it (no lexical score) and its cosine is less than
``EVIDENCE_MARGIN`` above the view's similarity floor (the cosine its embedder gives unrelated texts:
embed.calibrate). Such a memory is not returned to fill k: an agent reads fewer hits rather than
unrelated ones. On a host without similarity_floor() every vector hit counts as evidence.

The margin: texts of one domain (a company's) sit closer together than the calibration's unrelated
sentences, so a topic only a sibling namespace holds still found the caller's nearest rows a little
above the floor. 0.03 took those away and cost nothing on the dev sets (LoCoMo, paraphrases,
org-concepts: the same nDCG@10 and R@10 with the default embedder); 0.05 lost a paraphrase.
"""
from __future__ import annotations

from typing import Any, Mapping


def similarity_floor(view: Any) -> float | None:
    floor = getattr(view, "similarity_floor", None)
    return float(floor()) if callable(floor) else None


EVIDENCE_MARGIN = 0.03


def vector_evidence(cosine: float, floor: float | None) -> bool:
    """Whether a cosine alone is evidence that a memory matches: far enough above the floor."""
    return floor is None or cosine >= floor + EVIDENCE_MARGIN


def evidenced(cosine: Mapping[str, float], lexical: Mapping[str, float], floor: float | None) -> set[str]:
    """Refs with a lexical score above 0, or a cosine that is evidence by itself (vector_evidence)."""
    keep = {ref for ref, score in lexical.items() if score > 0}
    keep.update(ref for ref, c in cosine.items() if vector_evidence(c, floor))
    return keep


def only(scores: Mapping[str, float], refs: set[str]) -> dict[str, float]:
    return {ref: s for ref, s in scores.items() if ref in refs}
