"""The driver contract (rules 1-6), the view, and the kernel's search path around drivers."""
import logging
import sys

import pytest

from halomem.drivers import DriverUnavailableError
from halomem.drivers.view import admitted_refs, build_scoped_view
from halomem.errors import DriverError, InvalidInputError
from halomem.index import Scope
from halomem.types import Namespace, RetrieverQuery, ScoredRef, estimate_tokens

DRIVERS = ("baseline", "fusion", "graph", "keyword")


@pytest.fixture()
def corpus(kernel):
    facts = [
        "Marisol keeps her vintage accordion in the cedar attic closet",
        "the zephyr booster burns cryogenic methalox propellant",
        "Ann Okafor runs the quarterly planning offsite in Lisbon",
        "the Lisbon offsite budget is 40k EUR and covers travel",
        "Marisol and Ann Okafor co-author the onboarding guide",
        "a long note " + "about nothing in particular " * 40,
    ]
    ids = [kernel.remember("acme/eng", f).id for f in facts]
    kernel.remember("acme/sales", "the sales canary secret is peppercorn accordion zephyr")
    kernel.add_entity("acme", "Ann Okafor", ["Ann"])
    kernel.add_entity("acme", "Marisol")
    return ids


def _plan(kernel, driver, query, k=5, budget=2000, ns="acme/eng"):
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace(ns)), kernel.embedder)
        refs = kernel.registry.get(driver).plan(RetrieverQuery(query, view, budget, k))
        return refs, admitted_refs(view)


@pytest.mark.parametrize("driver", DRIVERS)
def test_refs_come_from_view_with_tiers_and_order(kernel, corpus, driver):
    refs, admitted = _plan(kernel, driver, "where is the accordion kept")
    assert refs and refs[0].ref == corpus[0]
    assert all(r.ref in admitted and r.tier == "L2" and r.id == r.ref for r in refs)
    assert all(0.0 <= r.score <= 1.0 for r in refs)
    assert [(-r.score, r.ref) for r in refs] == sorted((-r.score, r.ref) for r in refs)
    assert all(r.token_estimate == estimate_tokens(r.content) for r in refs)


@pytest.mark.parametrize("driver", DRIVERS)
def test_deterministic(kernel, corpus, driver):
    runs = [[r.ref for r in _plan(kernel, driver, "offsite Lisbon budget")[0]] for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]


class _CountingEmbedder:
    """The kernel's real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner):
        self.inner, self.texts = inner, []

    def embed(self, texts):
        self.texts += list(texts)
        return self.inner.embed(texts)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_plan_embeds_its_query_once(kernel, corpus, driver):
    kernel.put_concept("acme", "accordion", "the accordion is kept in the cedar attic closet")
    counting = _CountingEmbedder(kernel.embedder)
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace("acme/eng")), counting)
        refs = kernel.registry.get(driver).plan(RetrieverQuery("where is the accordion kept", view, 2000, 5))
    assert refs and counting.texts.count("where is the accordion kept") == 1


def test_a_driver_mutating_an_embedding_does_not_change_the_views_next_answer(kernel, corpus):
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace("acme/eng")), kernel.embedder)
        [vector] = view.embed(["accordion attic"])
        expected = list(vector)
        vector[:] = [0.0] * len(vector)
        assert view.embed(["accordion attic"]) == [expected]


@pytest.mark.parametrize("driver", DRIVERS)
def test_budget_kept_and_top_hit_survives_alone(kernel, corpus, driver):
    refs, _ = _plan(kernel, driver, "offsite Lisbon budget travel", k=10, budget=30)
    assert sum(r.token_estimate for r in refs) <= 30
    long_refs, _ = _plan(kernel, driver, "a long note about nothing in particular", k=10, budget=5)
    assert long_refs[0].ref == corpus[5] and long_refs[0].token_estimate > 5 and len(long_refs) == 1


def test_graph_capabilities_and_entity_fanout(kernel, corpus):
    assert kernel.registry.get("graph").capabilities().graph is True
    assert kernel.registry.get("baseline").capabilities().graph is False
    refs, _ = _plan(kernel, "graph", "what does Ann do", k=5)
    assert {corpus[2], corpus[4]} <= {r.ref for r in refs[:3]}


def test_entity_facts_hops_attribution_and_boundaries(kernel, corpus):
    scope = Scope(Namespace("acme/eng"))
    with kernel.index.reader() as r:
        hop1 = r.entity_facts(scope, "tell me about ann", 1)
        hop2 = r.entity_facts(scope, "tell me about ann", 2)
        none = r.entity_facts(scope, "quarterly planning", 2)  # 'Ann' inside 'planning' is no mention
        sales = r.entity_facts(Scope(Namespace("acme/sales")), "Marisol", 2)
    assert {(f.ref, f.entity, f.hop) for f in hop1} == {(corpus[2], "Ann Okafor", 1), (corpus[4], "Ann Okafor", 1)}
    # corpus[4] also mentions Marisol: hop-1 attribution wins; Marisol's other fact arrives at hop 2
    assert {(f.ref, f.entity, f.hop) for f in hop2} == {(corpus[2], "Ann Okafor", 1), (corpus[4], "Ann Okafor", 1),
                                                        (corpus[0], "Marisol", 2)}
    assert none == [] and sales == []


def test_lexical_candidates_reach_past_the_bounded_window(kernel):
    old = kernel.remember("acme", "the obsidian gargoyle guards the archive").id
    kernel.ingest_texts("acme", [f"filler memo {i} about routine things" for i in range(600)])
    scope = Scope(Namespace("acme"))
    with kernel.index.reader() as r:
        assert old not in {c.ref for c in r.candidates(scope, 500)}
        assert [c.ref for c in r.lexical_candidates(scope, "obsidian gargoyle", 10)] == [old]
    assert kernel.search("acme", "obsidian gargoyle", k=1).hits[0].ref == old


class _Flaky:
    name = "flaky"

    def capabilities(self):
        from halomem.types import Capabilities

        return Capabilities()

    def plan(self, q):
        raise DriverUnavailableError("sidecar down")


class _Broken(_Flaky):
    name = "broken"

    def plan(self, q):
        raise KeyError("oops")


class _Smuggler(_Flaky):
    """Returns a sibling namespace's ref it was never given, plus one honest ref."""

    name = "smuggler"
    contraband = ""

    def plan(self, q):
        honest = q.view.vector_search(q.view.embed([q.query])[0], 1)[0]
        return [ScoredRef(self.contraband, "L2", self.contraband, 1.0, "x", 1),
                ScoredRef(honest.ref, "L2", honest.ref, 0.5, "forged content", 1)]


def test_unavailable_driver_falls_back_to_baseline_and_is_audited(kernel, corpus, caplog):
    kernel.registry.mount(_Flaky())
    kernel.set_policy("acme/eng", {"retriever": "flaky"})
    with caplog.at_level(logging.WARNING, logger="halomem"):
        result = kernel.search("acme/eng", "accordion")
    assert result.driver == "baseline" and result.fallback == "flaky->baseline" and result.hits
    tail = kernel.audit_tail(2)
    assert tail[0].action == "fallback" and tail[0].fields["driver"] == "flaky"
    assert tail[1].outcome == "ok" and tail[1].fields["driver"] == "baseline"
    assert tail[0].request_id == tail[1].request_id
    assert "driver_fallback=flaky->baseline" in caplog.text


def test_other_driver_exception_fails_request_clearly(kernel, corpus):
    kernel.registry.mount(_Broken())
    with pytest.raises(DriverError, match="driver 'broken' failed: KeyError"):
        kernel.search("acme/eng", "accordion", driver="broken")
    failed = kernel.audit_tail(1)[0]
    assert (failed.action, failed.outcome, failed.fields["driver"]) == ("search", "failed", "broken")


def test_unmounted_policy_driver_serves_baseline_with_warning(kernel, corpus, caplog):
    with pytest.raises(InvalidInputError, match="no driver 'nonexistent' is mounted"):
        kernel.set_policy("acme/eng", {"retriever": "nonexistent"})
    kernel.set_policy("acme/eng", {"retriever": "nonexistent"}, allow_unmounted=True)
    with caplog.at_level(logging.WARNING, logger="halomem"):
        result = kernel.search("acme/eng", "accordion")
    assert result.driver == "baseline" and result.requested_driver == "nonexistent"
    assert "not mounted" in caplog.text
    assert kernel.audit_tail(2)[0].fields == {"outcome": "to-baseline", "driver": "nonexistent", "reason": "unmounted"}
    with pytest.raises(InvalidInputError, match="unknown driver"):
        kernel.search("acme/eng", "accordion", driver="nonexistent")


def test_refs_not_admitted_are_dropped_and_content_comes_from_kernel(kernel, corpus):
    sibling = kernel.search("acme/sales", "peppercorn").hits[0].ref
    smuggler = _Smuggler()
    smuggler.contraband = sibling
    kernel.registry.mount(smuggler)
    result = kernel.search("acme/eng", "Marisol accordion attic Lisbon offsite", driver="smuggler")
    assert [h.ref for h in result.hits] != [] and sibling not in {h.ref for h in result.hits}
    assert result.dropped == 1 and result.hits[0].content != "forged content"
    found = kernel.audit_tail(1)[0].fields
    assert (found["driver"], found["dropped"]) == ("smuggler", 1)


def test_entry_point_drivers_are_mounted(kernel, tmp_path, monkeypatch):
    dist = tmp_path / "halomem_testplugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: halomem-testplugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[halomem.drivers]\nechoer = halomem_testplugin:Echo\n"
                                           "broken = halomem_testplugin:Missing\n")
    (tmp_path / "halomem_testplugin.py").write_text(
        "from halomem.types import Capabilities, fit_budget\n"
        "class Echo:\n    name = 'echoer'\n"
        "    def capabilities(self): return Capabilities()\n"
        "    def plan(self, q): return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from halomem.config import Settings
    from halomem.mounts import mount_drivers
    from halomem.sandbox.isolated import IsolatedDriver

    mount_drivers(kernel.registry, Settings(driver_deadline_ms=5000))
    # mounted without importing them here: their code only ever runs in a sandboxed worker
    assert isinstance(kernel.registry.get("echoer"), IsolatedDriver) and "halomem_testplugin" not in sys.modules
    kernel.remember("acme", "a fact")
    served = kernel.search("acme", "fact", driver="echoer")
    assert served.driver == "echoer" and served.fallback is None and served.hits == []
    broken = kernel.search("acme", "fact", driver="broken")  # cannot load: baseline answers, audited
    assert broken.fallback == "broken->baseline" and broken.hits
    assert "did not load in its sandbox" in kernel.audit_tail(5, "fallback")[-1].fields["reason"]


@pytest.mark.parametrize("query", ["", "  \n ", "nul\x00byte", "bell\x07", "x" * 4097])
def test_bad_queries_are_refused_before_any_driver_runs(kernel, query):
    from halomem.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        kernel.search("acme", query)
    assert kernel.audit_tail(5) == []


def test_unicode_query_is_fine(kernel):
    made = kernel.remember("acme", "Zoë's café serves crème brûlée")
    assert kernel.search("acme", "café crème brûlée").hits[0].ref == made.id
