"""Query-term coverage: the share of a query's meaningful words a memory holds (the keyword
driver's measure, the seed's worked example), as a lane fusion can weigh beside BM25's IDF share.

Unweighted on purpose: BM25's share rewards the rarest words, coverage rewards holding all of
them, which is what a query that names several constraints ("X, not Y, in Z") asks for.
"""
from __future__ import annotations

from typing import Mapping

from ..embed.tokenize import STOPWORDS, term_set, terms


def coverage_scores(query: str, content: Mapping[str, str]) -> dict[str, float]:
    """Each memory's share (0..1) of the query's distinct words that are not stop words."""
    wanted = set(terms(query)) - STOPWORDS
    if not wanted:
        return {}
    return {ref: len(wanted & term_set(text)) / len(wanted) for ref, text in content.items()}
