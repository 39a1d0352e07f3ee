"""Source context: a memory whose siblings from the same source also match is more likely on topic.

Evidence for one question is often spread over several memories of one source: the turns of one
conversation session, the chunks of one document, the comments of one ticket. Classic passage
retrieval combines a passage's own score with the best score of its document; this is that rule
over memory sources. Memories without a source stand alone and are only rescaled.
"""
from __future__ import annotations

from typing import Mapping


def with_source_context(scores: Mapping[str, float], source: Mapping[str, str | None],
                        weight: float) -> dict[str, float]:
    """score + weight x (best score among *other* scored memories of the same source), kept in 0..1.

    ``scores`` are expected in 0..1 (a merged, normalized score).
    """
    top_two: dict[str, list[tuple[float, str]]] = {}
    for ref, score in scores.items():
        src = source.get(ref)
        if src is not None:
            best = top_two.setdefault(src, [])
            best.append((score, ref))
            best.sort(key=lambda x: (-x[0], x[1]))
            del best[2:]
    out: dict[str, float] = {}
    for ref, score in scores.items():
        src = source.get(ref)
        sibling = next((s for s, r in top_two.get(src, []) if r != ref), 0.0) if src is not None else 0.0
        out[ref] = (score + weight * sibling) / (1.0 + weight)
    return out
