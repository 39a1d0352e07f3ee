"""The lexical pool: exact while the matches are few, bounded and fair when a lexeme is common."""
import pytest

from halomem.index import Scope, lexical
from halomem.types import Namespace


def _pool(kernel, ns, query, limit=50):
    with kernel.index.reader() as reader:
        return [c.ref for c in reader.lexical_candidates(Scope(Namespace(ns)), query, limit)]


@pytest.fixture()
def crowded(kernel):
    """An ancestor full of one-term matches, an old row holding every term, a few rows of the caller's own."""
    full = kernel.remember("acme", "the kafka quota review for the billing cluster").id
    kernel.ingest_texts("acme", [f"kafka broker note {i}" for i in range(60)])
    own = kernel.ingest_texts("acme/eng", [f"kafka consumer lag fix {i}" for i in range(5)])
    kernel.ingest_texts("acme/sales", [f"kafka quota billing cluster review {i}" for i in range(5)])  # sibling
    return full, own


def test_below_the_bounds_every_match_is_ranked(kernel, crowded):
    full, own = crowded
    refs = _pool(kernel, "acme/eng", "kafka quota billing", limit=100)
    assert len(refs) == 61 + 5 and refs[0] == full and set(own) <= set(refs)


@pytest.fixture()
def small_bounds(monkeypatch):
    monkeypatch.setattr(lexical, "RARE_DOCS", 10)
    monkeypatch.setattr(lexical, "COMMON_CAP", 10)


def test_above_the_bounds_the_pool_keeps_rare_matches_and_every_namespace_share(kernel, crowded, small_bounds):
    full, own = crowded
    refs = _pool(kernel, "acme/eng", "kafka quota billing")
    assert refs[0] == full  # holds the rare lexemes: ranked first though 65 rows match "kafka"
    assert set(own) <= set(refs)  # the caller's own namespace gets its share despite the crowded ancestor
    assert len(refs) <= 1 + 10 + 10
    with kernel.index.reader() as reader:  # nothing outside the ACL either way
        rows = reader.fetch(Scope(Namespace("acme/eng")), refs)
    assert set(rows) == set(refs) and {r.namespace for r in rows.values()} == {"acme", "acme/eng"}


def test_single_term_queries_and_empty_queries(kernel, crowded, small_bounds):
    _, own = crowded
    assert set(own) <= set(_pool(kernel, "acme/eng", "kafka"))
    assert _pool(kernel, "acme/eng", "?!") == [] and _pool(kernel, "acme/eng", "kafka", limit=0) == []


def test_queries_of_one_shape_share_a_statement_but_not_their_values(kernel):
    """ranked() builds its statement once per caller and query shape: a second query of the same
    shape (as many lexemes, as rare) must rank by its own lexemes, a source-scoped caller by its sources."""
    kernel.ingest_texts("acme", ["the quasar telescope log", "the nebula camera log"], label="test")
    kernel.ingest_texts("acme", ["the quasar camera manual"], source="manuals", label="test")
    with kernel.index.reader() as reader:
        first = [c.content for c in reader.lexical_candidates(Scope(Namespace("acme")), "quasar telescope", 10)]
        second = [c.content for c in reader.lexical_candidates(Scope(Namespace("acme")), "nebula camera", 10)]
        scoped = [c.content for c in reader.lexical_candidates(Scope(Namespace("acme"), ("manuals",)), "nebula camera", 10)]
    assert first[0] == "the quasar telescope log" and "the nebula camera log" not in first
    assert second[0] == "the nebula camera log" and "the quasar telescope log" not in second
    assert scoped == ["the quasar camera manual"]
    assert lexical._ranking_statement.cache_info().hits >= 1
