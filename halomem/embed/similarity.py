"""Cosine similarity with numpy."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    na, nb = np.linalg.norm(va), np.linalg.norm(vb)
    if na == 0 or nb == 0:
        return 0.0
    return float(va @ vb / (na * nb))


def cosine_many(query: Sequence[float], rows: Sequence[Sequence[float]]) -> np.ndarray:
    if len(rows) == 0:
        return np.zeros(0)
    q = np.asarray(query, dtype=np.float64)
    m = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    norms[norms == 0] = 1.0
    return (m @ q) / norms
