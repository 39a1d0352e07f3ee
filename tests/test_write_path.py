"""remember / supersede / erase / entities / concepts through the one write path."""
import threading

import pytest
import sqlalchemy as sa

from halomem.errors import ConflictError, InvalidInputError, NotFoundError
from tests.conftest import count


def test_remember_records_row_vector_and_audit(kernel):
    made = kernel.remember("acme/eng", "postgres runs on port 5432", source="runbook", provenance={"by": "ops"})
    with kernel.engine.connect() as conn:
        row = conn.execute(sa.text("SELECT namespace, source, tier, provenance, embedding IS NOT NULL AS has_vec,"
                                   " t_valid_to FROM memories WHERE id=:i"), {"i": made.id}).one()
    assert (row.namespace, row.source, row.tier, row.provenance, row.has_vec, row.t_valid_to) == \
        ("acme/eng", "runbook", "L2", {"by": "ops"}, True, None)
    [audit_row] = kernel.audit_tail(5)
    assert audit_row.action == "remember" and made.id in audit_row.detail and audit_row.actor_ns == "acme/eng"


@pytest.mark.parametrize("content", ["", "   ", "nul\x00byte", "x" * 70_000])
def test_bad_content_is_refused_and_nothing_written(kernel, content):
    with pytest.raises(InvalidInputError):
        kernel.remember("acme", content)
    assert count(kernel, "SELECT count(*) FROM memories") == 0
    assert count(kernel, "SELECT count(*) FROM audit_log") == 0


def test_supersede_links_chain_and_closes_validity(kernel):
    a = kernel.remember("acme", "v1 of the fact").id
    b = kernel.supersede("acme", a, "v2 of the fact").id
    with kernel.engine.connect() as conn:
        rows = {r.id: r for r in conn.execute(sa.text("SELECT * FROM memories"))}
    assert rows[a].superseded_by == b and rows[b].supersedes == a
    assert rows[a].t_valid_to == rows[b].t_valid_from and rows[b].t_valid_to is None


def test_supersede_of_non_head_is_conflict_and_other_namespace_not_found(kernel):
    a = kernel.remember("acme", "fact one").id
    kernel.supersede("acme", a, "fact two")
    with pytest.raises(ConflictError, match="no longer the head"):
        kernel.supersede("acme", a, "fact three")
    with pytest.raises(NotFoundError):
        kernel.supersede("acme/eng", a, "a child may not rewrite its parent's memory")
    with pytest.raises(NotFoundError):
        kernel.supersede("acme", "m_doesnotexist", "x")


def test_conflict_names_the_chains_actual_state(kernel):
    a = kernel.remember("acme", "v1").id
    b = kernel.supersede("acme", a, "v2").id
    c = kernel.supersede("acme", b, "v3").id
    with pytest.raises(ConflictError, match=f"supersede its current head {c}"):
        kernel.supersede("acme", a, "retry from a stale id")
    kernel.erase("acme", c, reason="withdrawn")
    for stale in (a, b):  # a retry keeps failing, and says why: an erase ended the chain
        with pytest.raises(ConflictError, match=f"its chain was ended by erasing {c}"):
            kernel.supersede("acme", stale, "retry")


def test_concurrent_supersede_has_exactly_one_winner(kernel):
    head = kernel.remember("acme/eng", "the chain's only head").id
    barrier = threading.Barrier(8)
    outcomes: list[object] = []
    lock = threading.Lock()

    def racer(i: int) -> None:
        barrier.wait()
        try:
            made = kernel.supersede("acme/eng", head, f"racer {i} wins")
            result: object = made.id
        except ConflictError as exc:
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if isinstance(o, str)]
    assert len(outcomes) == 8 and len(winners) == 1
    assert all(isinstance(o, ConflictError) for o in outcomes if o not in winners)
    assert count(kernel, "SELECT count(*) FROM memories WHERE t_valid_to IS NULL") == 1
    assert count(kernel, "SELECT count(*) FROM memories WHERE supersedes = '%s'" % head) == 1


def test_erase_keeps_contentless_tombstone_and_audit(kernel):
    a = kernel.remember("acme", "customer SSN is 123-45-6789", provenance={"file": "crm.csv"}).id
    kernel.add_entity("acme", "customer")
    kernel.erase("acme", a, reason="GDPR request")
    with kernel.engine.connect() as conn:
        row = conn.execute(sa.text("SELECT content, embedding, erased_at, t_valid_to, provenance FROM memories"
                                   " WHERE id=:i"), {"i": a}).one()
        mentions = conn.execute(sa.text("SELECT count(*) FROM mentions WHERE memory_id=:i"), {"i": a}).scalar()
    assert row.content == "" and row.embedding is None and row.erased_at and row.t_valid_to
    assert row.provenance == {} and mentions == 0
    assert kernel.audit_tail(1)[0].detail.startswith(f"erase ok id={a}")
    with pytest.raises(ConflictError):
        kernel.erase("acme", a)
    with pytest.raises(ConflictError):
        kernel.supersede("acme", a, "resurrect")


def test_entity_mentions_match_at_word_boundaries(kernel):
    ann = kernel.remember("acme", "Ann leads the platform team").id
    kernel.remember("acme", "quarterly planning starts monday")
    child = kernel.remember("acme/eng", "ask ann, or Annie? no: ANN.").id
    kernel.remember("acme/sales", "the planning budget")
    entity_id, linked = kernel.add_entity("acme", "Ann", ["Annabel Lee"])
    assert linked == 1  # acme/eng's row is linked too, but acme does not read it: not counted
    later = kernel.remember("acme/eng", "Annabel Lee approved it").id
    with kernel.engine.connect() as conn:
        linked_ids = {r[0] for r in conn.execute(sa.text("SELECT memory_id FROM mentions WHERE entity_id=:e"),
                                                 {"e": entity_id})}
    assert linked_ids == {ann, child, later}


def test_concepts_put_search_materialize(kernel):
    kernel.put_concept("acme", "eng/deploys", "how deploys work: canary then full rollout")
    hits = kernel.concepts("acme/eng", "canary rollout")
    assert [(h.tier, h.ref, h.id) for h in hits] == [("L3", "acme:eng/deploys", None)]
    assert kernel.concepts("globex", "canary rollout") == []
    made = kernel.materialize_concept("acme", "eng/deploys")
    [row] = kernel.history("acme", made.id)
    assert row.provenance == {"concept": "eng/deploys", "concept_ns": "acme"} and row.source == "concept:eng/deploys"
    with pytest.raises(InvalidInputError):
        kernel.put_concept("acme", "/bad path/", "x")


def test_a_concept_that_answers_the_question_ranks_beside_the_best_memory(kernel):
    kernel.put_concept("acme", "how-deploys-work", "How deploys work. Merges build an image, staging runs smoke"
                       " tests, a canary takes 5% of traffic, then the rollout finishes.")
    kernel.put_concept("acme", "how-expenses-work", "How expense reports work. Receipts go to the finance portal.")
    kernel.ingest_texts("acme/eng", [f"Priya paused deploys on day {i}; canary ticket #{i} is open" for i in range(40)])
    for driver in ("baseline", "fusion"):
        hits = kernel.search("acme/eng", "how do deploys work", driver=driver).hits
        assert [h.ref for h in hits[:2]].count("acme:how-deploys-work") == 1, driver
        assert all(h.ref != "acme:how-expenses-work" for h in hits), driver
    # concept search lists only concepts with evidence, never an unrelated one at score 0
    assert [c.ref for c in kernel.concepts("acme/eng", "how do deploys work")][:1] == ["acme:how-deploys-work"]
    assert kernel.concepts("acme/eng", "quarterly vendor forecast") == []


def test_same_concept_path_in_parent_and_child_are_two_distinct_hits(kernel, cli):
    import json

    kernel.put_concept("acme", "eng/deploys", "company-wide: deploys need a change ticket")
    kernel.put_concept("acme/eng", "eng/deploys", "team: deploys go through ArgoCD canaries, then full rollout")
    result = kernel.search("acme/eng", "how do deploys work", k=10)
    l3 = {h.ref: h for h in result.hits if h.tier == "L3"}
    assert set(l3) == {"acme:eng/deploys", "acme/eng:eng/deploys"}
    assert l3["acme:eng/deploys"].namespace == "acme" and "change ticket" in l3["acme:eng/deploys"].content
    assert l3["acme/eng:eng/deploys"].namespace == "acme/eng" and "ArgoCD" in l3["acme/eng:eng/deploys"].content
    found = json.loads(cli("concept", "search", "--ns", "acme/eng", "deploys", "--json").stdout)
    assert {(h["namespace"], h["path"]) for h in found} == {("acme", "eng/deploys"), ("acme/eng", "eng/deploys")}
