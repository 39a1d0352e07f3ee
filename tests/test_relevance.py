"""What a hit's score means (halomem.relevance): the kernel's calibrated chance that the hit is
relevant, the same whichever driver ranked it, on an absolute scale (an unrelated memory never
scores high because something else matched), and a hit list that ends where relevance ends."""
from __future__ import annotations

import pytest

from halomem import relevance
from halomem.bench.harness import ephemeral_kernel
from halomem.relevance import Features, cut_tail
from halomem.types import Capabilities, RetrieverQuery, ScoredRef

FACTS = {
    "deploy": "Deploys go through ArgoCD with canary rollouts: five percent of traffic for thirty minutes.",
    "oncall": "The on-call engineer is paged through PagerDuty and must acknowledge within five minutes.",
    "vacation": "Employees get twenty-five days of paid vacation a year, booked in Workday.",
    "lunch": "The cafeteria serves lunch from noon until two in the afternoon.",
}
DRIVERS = ("baseline", "fusion", "graph", "keyword")


class EverythingIsPerfect:
    """A driver that calls each candidate a perfect match: its own scores must not reach a caller."""

    name = "everything-perfect"

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=False, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        return [ScoredRef(c.ref, "L2", c.ref, 1.0, c.content, 10) for c in q.view.candidates(50)][:q.k]


@pytest.fixture(scope="module")
def store():
    with ephemeral_kernel(None) as kernel:  # the default embedder, what the coefficients were fit for
        ids = {key: kernel.remember("acme/eng", text).id for key, text in FACTS.items()}
        kernel.registry.mount(EverythingIsPerfect())
        yield kernel, ids


def test_the_score_is_a_probability_on_one_scale_and_the_tail_ends_at_the_cut():
    low, high = Features(0.0, 0.0), Features(0.8, 1.0)
    assert 0.0 < relevance.score(low) < relevance.RELEVANCE_CUT < relevance.score(high) < 1.0
    assert relevance.score(Features(0.6, 1.0)) > relevance.score(Features(0.6, 0.0))  # words count with meaning
    assert relevance.score(Features(0.0, 1.0)) == relevance.score(low)  # and are no evidence without it
    good, bad, exact = Features(0.8, 0.5), Features(0.0, 0.2), Features(-0.1, 1.0)
    assert cut_tail([good, bad, good, bad, bad]) == 3
    assert cut_tail([bad, bad]) == 0 and cut_tail([]) == 0
    assert cut_tail([good, bad, exact, bad]) == 3  # every distinguishing word: an exact keyword match stays
    assert Features.measured(1.5, 2.0, 0.2) == Features(1.0, 1.0)  # clipped, whatever a reader returns


def test_a_hit_scores_the_same_whichever_driver_ranked_it(store):
    kernel, ids = store
    query = "how do deploys roll out with ArgoCD canaries"
    scores = {}
    for driver in (*DRIVERS, EverythingIsPerfect.name):
        hits = kernel.search("acme/eng", query, driver=driver).hits
        scores[driver] = {h.id: h.score for h in hits}
    deploy = {d: s[ids["deploy"]] for d, s in scores.items() if ids["deploy"] in s}
    assert set(deploy) == {*DRIVERS, EverythingIsPerfect.name}
    assert max(deploy.values()) - min(deploy.values()) < 1e-9
    assert all(0.0 <= v <= 1.0 for s in scores.values() for v in s.values())
    # a driver's own "1.0 for everything" never reaches the caller
    assert all(v < 1.0 for v in scores[EverythingIsPerfect.name].values())


def test_the_exact_match_outscores_a_paraphrase_which_outscores_the_unrelated(store):
    kernel, ids = store
    exact = kernel.search("acme/eng", FACTS["oncall"], driver="fusion").hits
    paraphrase = kernel.search("acme/eng", "how is the on-call person alerted", driver="fusion").hits
    by_id = {h.id: h.score for h in exact}
    assert exact[0].id == ids["oncall"] and exact[0].score > 0.5
    assert all(by_id[i] < exact[0].score for i in by_id if i != ids["oncall"])
    assert paraphrase and paraphrase[0].id == ids["oncall"]
    assert exact[0].score > paraphrase[0].score
    assert all(h.score < paraphrase[0].score for h in paraphrase[1:])


def test_a_question_nothing_answers_gets_no_filler(store):
    kernel, _ = store
    for driver in (*DRIVERS, EverythingIsPerfect.name):
        hits = kernel.search("acme/eng", "the migration patterns of arctic terns", driver=driver).hits
        assert hits == [], (driver, [(h.content[:30], h.score) for h in hits])


def test_a_concept_that_matches_lends_nothing_to_an_unrelated_memory(store):
    kernel, ids = store
    kernel.put_concept("acme/eng", "eng/deploys", "How we deploy: ArgoCD canary rollouts, then full traffic.")
    hits = kernel.search("acme/eng", "ArgoCD canary deploys", driver="fusion").hits
    tiers = {h.tier for h in hits}
    assert "L3" in tiers
    unrelated = [h for h in hits if h.id in (ids["lunch"], ids["vacation"])]
    assert all(h.score < relevance.RELEVANCE_CUT * 4 for h in unrelated)
    assert hits[-1].score >= relevance.RELEVANCE_CUT  # the list ends where relevance ends
