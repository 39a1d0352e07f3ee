"""Score normalization."""
from __future__ import annotations

from typing import Mapping


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale to 0..1; a single score (or all equal positive scores) maps to 1.0."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi == lo:
        return {ref: (1.0 if hi > 0 else 0.0) for ref in scores}
    return {ref: (s - lo) / (hi - lo) for ref, s in scores.items()}
