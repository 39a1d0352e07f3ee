"""Source context: the view carries each memory's source, and fusion ranks with its siblings."""
import pytest

from halomem.drivers.view import build_scoped_view
from halomem.index import Scope
from halomem.retrieval import gather_pool, with_source_context
from halomem.types import Namespace, RetrieverQuery


def test_sibling_score_raises_a_memory_and_stays_normalized():
    scores = {"a1": 0.5, "a2": 0.9, "b1": 0.5, "lone": 0.5}
    source = {"a1": "s:a", "a2": "s:a", "b1": "s:b", "lone": None}
    out = with_source_context(scores, source, weight=0.5)
    assert out["a1"] == pytest.approx((0.5 + 0.5 * 0.9) / 1.5)  # raised by its best sibling
    assert out["a2"] == pytest.approx((0.9 + 0.5 * 0.5) / 1.5)  # the top memory gets the runner-up, not itself
    assert out["b1"] == out["lone"] == pytest.approx(0.5 / 1.5)  # no scored sibling: rescaled only
    assert out["a1"] > out["b1"] and all(0.0 <= v <= 1.0 for v in out.values())
    assert with_source_context(scores, {}, weight=0.5) == {k: pytest.approx(v / 1.5) for k, v in scores.items()}


def test_view_hands_drivers_the_source_of_every_row(kernel):
    a = kernel.remember("acme/eng", "the quarterly offsite agenda is final", source="meeting:q3-offsite").id
    b = kernel.remember("acme/eng", "the offsite agenda has a hiking slot").id
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace("acme/eng")), kernel.embedder)
        pool = gather_pool(view, "offsite agenda", vector_k=10)
        window = {c.ref: c.source for c in view.candidates(10)}
    assert pool.source == {a: "meeting:q3-offsite", b: None}
    assert window == {a: "meeting:q3-offsite", b: None}


def test_fusion_prefers_the_memory_whose_source_also_matches(kernel):
    ns = "acme/eng"
    kernel.set_policy(ns, {"consolidate": "off"})  # the same text twice: two memories, on purpose here
    # two memories with the same text, so the same own score; only their sources differ
    in_context = kernel.remember(ns, "the vendor contract renews in March", source="thread:vendor-review").id
    alone = kernel.remember(ns, "the vendor contract renews in March", source="thread:lunch-orders").id
    kernel.remember(ns, "vendor review: the contract price rises 8 percent", source="thread:vendor-review")
    kernel.remember(ns, "lunch orders are due by eleven", source="thread:lunch-orders")
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace(ns)), kernel.embedder)
        refs = kernel.registry.get("fusion").plan(RetrieverQuery("when does the vendor contract renew", view, 2000, 5))
    score = {r.ref: r.score for r in refs}
    assert score[in_context] > score[alone]
