"""What a hit's score means: the estimated chance that it is relevant to the query, the same for
every driver and every query, computed by the kernel (never by a driver) from two things any reader
can check: how close the hit is in meaning (its cosine with the query, measured from the store
embedder's noise floor, so 0 is "as close as unrelated texts get") and how much of the query's
distinguishing words it holds (the IDF-weighted share of the query's lexemes).

    score = 1 / (1 + exp(-(INTERCEPT + meaning * (MEANING + WITH_WORDS * words))))

fit by logistic regression on the pooled top-10 hits of every shipped driver over the dev sets, each
set weighing the same (`halomem bench calibration`, docs/bench/calibration.md, which also shows how
each score band holds on each set and driver). A score of 0.2 means that of the hits scored about
0.2 there, about one in five was relevant; 0.8, eight in ten. Both measurements are absolute: the
best of a bad lot scores low, so a question nothing answers gets no hits. Closeness in meaning
counts for more when the text also holds the query's distinguishing words (WITH_WORDS); words
alone, in a text no closer in meaning than unrelated ones, are no evidence (fit with a words term
of its own, the dev sets gave it a weight of 0.02, or a negative one beside this product). A driver decides the order; the score says how much to trust each hit, and a hit
list ends where the hits stop being worth reading (RELEVANCE_CUT): the hits after the last one
scoring at least that, or holding every word of the query that tells memories apart (an exact
keyword match: an identifier in a long page, which a cosine dilutes), are not returned.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# fit by `halomem bench calibration --fit` (docs/bench/calibration.md): the shipped embedder, the
# top 10 of the four shipped drivers on LoCoMo, its sessions, org-concepts and paraphrases
INTERCEPT = -3.50
MEANING = 4.43
WITH_WORDS = 1.42
COEFFICIENTS = (INTERCEPT, MEANING, WITH_WORDS)
RELEVANCE_CUT = 0.05  # 1.6% of the dev sets' top-10 hits fall after the last hit above it, 0.4% of the relevant
ALL_WORDS = 0.999  # a hit holding this share of the query's weighted words holds them all: never cut  # hits after the last one at or above this are no longer worth reading


@dataclass(frozen=True)
class Features:
    """One hit's two measurements (IndexReader.relevance_features), the floor already taken off."""

    meaning: float  # (cosine - floor) / (1 - floor), clipped to -1..1: 0 is as close as unrelated texts
    words: float  # the share (0..1) of the query's IDF its text holds

    @classmethod
    def measured(cls, cosine: float, share: float, floor: float) -> "Features":
        span = max(1.0 - floor, 1e-6)
        return cls(max(-1.0, min(1.0, (cosine - floor) / span)), max(0.0, min(1.0, share)))


def score(f: Features, coefficients: tuple[float, float, float] = COEFFICIENTS) -> float:
    """The calibrated chance (0..1) that a hit with these measurements is relevant."""
    intercept, meaning, with_words = coefficients
    z = intercept + f.meaning * (meaning + with_words * f.words)
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def worth_reading(f: Features, cut: float = RELEVANCE_CUT) -> bool:
    """Whether a hit holds up a list: it scores at least ``cut``, or holds every distinguishing word."""
    return score(f) >= cut or f.words >= ALL_WORDS


def cut_tail(features: list[Features], cut: float = RELEVANCE_CUT) -> int:
    """How many of a ranked list's hits to keep: through the last one worth reading."""
    for i in range(len(features) - 1, -1, -1):
        if worth_reading(features[i], cut):
            return i + 1
    return 0
