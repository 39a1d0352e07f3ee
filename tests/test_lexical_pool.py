"""The lexical pool: exact below LEXICAL_RANK_CAP, bounded and fair above it."""
import pytest

from halomem.index import Scope, reader as reader_module
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


def test_below_the_cap_every_match_is_ranked(kernel, crowded):
    full, own = crowded
    refs = _pool(kernel, "acme/eng", "kafka quota billing", limit=100)
    assert len(refs) == 61 + 5 and refs[0] == full and set(own) <= set(refs)


def test_above_the_cap_the_pool_keeps_full_matches_and_every_namespace_share(kernel, crowded, monkeypatch):
    monkeypatch.setattr(reader_module, "LEXICAL_RANK_CAP", 10)
    full, own = crowded
    refs = _pool(kernel, "acme/eng", "kafka quota billing")
    assert full in refs  # holds every term: ranked even though 60 newer rows match "kafka"
    assert set(own) <= set(refs)  # the caller's own namespace gets its share despite the crowded ancestor
    assert len(refs) <= 10 + 1
    with kernel.index.reader() as reader:  # nothing outside the ACL either way
        rows = reader.fetch(Scope(Namespace("acme/eng")), refs)
    assert set(rows) == set(refs) and {r.namespace for r in rows.values()} == {"acme", "acme/eng"}


def test_single_term_queries_and_empty_queries(kernel, crowded, monkeypatch):
    monkeypatch.setattr(reader_module, "LEXICAL_RANK_CAP", 10)
    _, own = crowded
    assert set(own) <= set(_pool(kernel, "acme/eng", "kafka"))
    assert _pool(kernel, "acme/eng", "?!") == [] and _pool(kernel, "acme/eng", "kafka", limit=0) == []
