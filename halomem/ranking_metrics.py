"""Ranking metrics over a ranked list of doc ids and a relevant set (eval and the benchmarks share them)."""
from __future__ import annotations

import math
from typing import Sequence


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def mrr_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    for i, doc in enumerate(ranked[:k]):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


METRICS = {"R@5": lambda r, rel: recall_at(r, rel, 5), "R@10": lambda r, rel: recall_at(r, rel, 10),
           "nDCG@10": lambda r, rel: ndcg_at(r, rel, 10), "MRR@10": lambda r, rel: mrr_at(r, rel, 10)}


def score_all(ranked: Sequence[str], relevant: set[str]) -> dict[str, float]:
    return {name: fn(ranked, relevant) for name, fn in METRICS.items()}


def graded_ndcg_at(ranked: Sequence[str], grades: dict[str, float], k: int) -> float:
    """nDCG@k with graded relevance (gain = grade), as trec_eval's ndcg_cut; binary grades give ndcg_at."""
    dcg = sum(grades.get(doc, 0.0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(grades.values(), reverse=True)[:k]))
    return dcg / ideal if ideal else 0.0
