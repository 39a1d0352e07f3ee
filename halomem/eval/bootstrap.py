"""Paired bootstrap over queries: a mean's 95% interval, and a difference's against a reference arm
measured on the same queries (each resample draws queries, so both arms see the same draw)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
SEED = 20261206  # fixed: the same judgements give the same intervals


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"value": round(self.value, 4), "low": round(self.low, 4), "high": round(self.high, 4)}


def draws(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(resamples, n) query indices, drawn with replacement, shared by every arm of one report."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def mean_interval(values: np.ndarray, picks: np.ndarray) -> Interval:
    means = values[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(float(values.mean()), float(low), float(high))


def paired_difference(values: np.ndarray, reference: np.ndarray, picks: np.ndarray) -> Interval:
    return mean_interval(values - reference, picks)
