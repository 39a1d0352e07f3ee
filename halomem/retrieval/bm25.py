"""Okapi BM25 over a small candidate pool (the pool is the corpus for IDF)."""
from __future__ import annotations

import math
from collections import Counter
from typing import Mapping

from ..embed.tokenize import STOPWORDS, stem, terms


def idf(documents: int, frequency: int) -> float:
    """Okapi's IDF: the host's BM25 (index.lexical), this pool BM25 and fusion's query mass share it."""
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))


def analyze(text: str) -> list[str]:
    return [stem(t) for t in terms(text) if t not in STOPWORDS]


def bm25_scores(query: str, docs: Mapping[str, str], k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    """BM25 score per doc ref; refs with no query term get no entry."""
    q_terms = set(analyze(query))
    if not q_terms or not docs:
        return {}
    tokenized = {ref: analyze(text) for ref, text in docs.items()}
    n = len(tokenized)
    avgdl = sum(len(t) for t in tokenized.values()) / n or 1.0
    df: Counter[str] = Counter()
    for toks in tokenized.values():
        df.update(q_terms.intersection(toks))
    scores: dict[str, float] = {}
    for ref, toks in tokenized.items():
        tf = Counter(t for t in toks if t in q_terms)
        if not tf:
            continue
        dl = len(toks)
        s = 0.0
        for term, f in tf.items():
            s += idf(n, df[term]) * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))
        scores[ref] = s
    return scores
