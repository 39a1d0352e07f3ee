"""Subject match: a memory about the entity a query names outranks one that only mentions it.

"When did Caroline go to the support group?" is answered by what Caroline said or did, not by
every memory that greets her. The first entity a memory names in its opening is what it is about:
the speaker of a transcript turn ("Caroline: ..."), the subject of a sentence ("Alice approved
..."). Entities come from the view (``view.entities``, the ones the caller may see); a host without
it, or a query that names none, leaves the ranking alone.

Names are matched as runs of whole words (embed.tokenize.terms, lower-cased), so 'Ann' is not
found in 'planning', and only a memory's first OPENING_CHARS are read: the cost does not grow
with document length or with the number of entities.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping, Sequence

from ..embed.tokenize import terms
from ..types import Entity

OPENING_CHARS = 200  # where a turn's speaker or a sentence's subject is named


@lru_cache(maxsize=16)
def _name_index(entities: tuple[Entity, ...]) -> tuple[dict[tuple[str, ...], str], frozenset[str], int]:
    """(every name and alias as a word tuple -> the entity's name, the words names start with,
    the longest name in words)."""
    names: dict[tuple[str, ...], str] = {}
    for e in entities:
        for name in (e.name, *e.aliases):
            key = tuple(terms(name))
            if key:
                names.setdefault(key, e.name)
    return names, frozenset(k[0] for k in names), max((len(k) for k in names), default=0)


def _entities_named(words: Sequence[str], index: tuple[dict[tuple[str, ...], str], frozenset[str], int],
                    first_only: bool) -> list[str]:
    """The entities named in ``words``, in order; the longest name wins at one place."""
    names, starts, longest = index
    found = []
    for i, word in enumerate(words):
        if word not in starts:
            continue
        for n in range(min(longest, len(words) - i), 0, -1):
            hit = names.get(tuple(words[i:i + n]))
            if hit is not None:
                found.append(hit)
                if first_only:
                    return found
                break
    return found


def subject_scores(view: Any, query: str, content: Mapping[str, str]) -> dict[str, float]:
    """1.0 for each memory whose first-named entity is one the query names, 0.0 for the others;
    empty when no visible entity is named in the query (then there is nothing to add)."""
    lookup = getattr(view, "entities", None)
    entities = lookup() if callable(lookup) else []
    if not entities or not content:
        return {}
    index = _name_index(tuple(entities))
    named = set(_entities_named(terms(query), index, first_only=False))
    if not named:
        return {}
    key = tuple(entities)
    return {ref: 1.0 if _subject(text[:OPENING_CHARS], key) in named else 0.0 for ref, text in content.items()}


@lru_cache(maxsize=1 << 16)
def _subject(opening: str, entities: tuple[Entity, ...]) -> str | None:
    """The first entity ``opening`` names (None: none). Cached: a namespace's pools repeat their
    memories from query to query, and this is most of what subject matching costs."""
    found = _entities_named(terms(opening), _name_index(entities), first_only=True)
    return found[0] if found else None
