"""Exclusions a query states: "the French Revolution (excluding the Reign of Terror)", "hobbies other
than fixing cars", "Aaron's profile, but don't mention Moses". What a query asks to leave out is not
what it asks for: ranked by its words, the memories about the excluded part come first (they hold
the query's rarest words), the opposite of what was asked. So the lanes rank what the query asks
for, the exclusion taken out: from its cue to the end of its clause (a comma, a bracket, a full stop,
a question mark).

Only phrases that state an exclusion are cues; a bare "without" or "not" is left alone ("patients
without diabetes", "does not reduce" are what a query asks about).
"""
from __future__ import annotations

import re

_EXCLUSION = re.compile(
    r"\b(?:excluding|except(?:\s+for)?|other\s+than|apart\s+from|not\s+including|aside\s+from"
    r"|(?:do\s+not|don't|don’t)\s+(?:mention|include|discuss|consider)"
    r"|without\s+(?:mentioning|including|discussing|considering))\b[^.,;:?!()\[\]]*",
    re.IGNORECASE)


def without_exclusions(query: str) -> str:
    """``query`` with each exclusion it states left out (its cue and the rest of that clause); the
    query as it is when it states none, or when nothing else would be left."""
    asked = _EXCLUSION.sub(" ", query)
    if asked == query or not re.search(r"\w", asked):
        return query
    return " ".join(asked.split())
