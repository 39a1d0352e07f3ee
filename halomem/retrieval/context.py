"""Source context: a memory whose siblings from the same source also match is more likely on topic.

Evidence for one question is often spread over several memories of one source: the turns of one
conversation session, the chunks of one document, the comments of one ticket. Classic passage
retrieval combines a passage's own score with the best score of its document; this is that rule
over memory sources. Memories without a source stand alone and are only rescaled.
"""
from __future__ import annotations

from typing import Mapping


def _raised(score: float, context: float, weight: float) -> float:
    """A 0..1 score raised by a 0..1 context score, kept in 0..1."""
    return (score + weight * context) / (1.0 + weight)


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
        out[ref] = _raised(score, sibling, weight)
    return out


def with_neighbour_context(scores: Mapping[str, float], source: Mapping[str, str | None],
                           position: Mapping[str, int | None], weight: float) -> dict[str, float]:
    """score + weight x (the better score of the memories just before and after it in its source),
    kept in 0..1.

    The finer half of source context: an answer is often a reply whose words are in the turn it
    answers ("Yes, last week!"), or a chunk that continues the one that names the subject. Only
    scored neighbours count. Two visible namespaces may use one source name; their places are
    counted apart, so a memory of one may then take a neighbour of the other.
    """
    at: dict[tuple[str, int], float] = {}
    for ref, score in scores.items():
        src, pos = source.get(ref), position.get(ref)
        if src is not None and pos is not None:
            at[(src, pos)] = max(score, at.get((src, pos), 0.0))
    out: dict[str, float] = {}
    for ref, score in scores.items():
        src, pos = source.get(ref), position.get(ref)
        beside = 0.0
        if src is not None and pos is not None:
            beside = max(at.get((src, pos - 1), 0.0), at.get((src, pos + 1), 0.0))
        out[ref] = _raised(score, beside, weight)
    return out
