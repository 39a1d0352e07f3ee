"""Merging ranked lanes into one score per ref."""
from __future__ import annotations

from typing import Mapping, Sequence

from .normalize import min_max


def weighted_sum(lanes: Sequence[tuple[Mapping[str, float], float]]) -> dict[str, float]:
    """Weighted sum of lanes already on one scale; a ref absent from a lane scores 0 there."""
    merged: dict[str, float] = {}
    for scores, weight in lanes:
        for ref, s in scores.items():
            merged[ref] = merged.get(ref, 0.0) + weight * s
    return merged


def hybrid_merge(lanes: Sequence[tuple[Mapping[str, float], float]]) -> dict[str, float]:
    """Weighted sum of min-max-normalized lanes; a ref absent from a lane scores 0 there."""
    return weighted_sum([(min_max(scores), weight) for scores, weight in lanes])


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = 60) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, ref in enumerate(ranking, start=1):
            fused[ref] = fused.get(ref, 0.0) + 1.0 / (k + rank)
    return fused
