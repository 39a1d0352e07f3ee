"""ACL property tests: random namespace trees, rows, supersedes and erasures, every caller.

Every index and view method must return exactly the valid, non-erased rows of the caller's
namespace and its ancestors. One case is one (world, caller) pair. The CI profile runs a few
hundred cases; `make test-full` (HALOMEM_TEST_PROFILE=full) runs at least 10,000.
"""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from halomem.drivers.view import admitted_refs, build_scoped_view
from halomem.index import Scope
from halomem.types import Namespace

FULL = os.environ.get("HALOMEM_TEST_PROFILE") == "full"
WORLDS = 1300 if FULL else 40
CASES = {"worlds": 0, "cases": 0}
TABLES = "memories, lexicon, lexicon_events, concepts, entities, entity_aliases, mentions, audit_log, policies"

segment = st.sampled_from(["a", "b", "c", "a-b", "a.b", "x_1"])
namespaces = st.lists(segment, min_size=1, max_size=4).map("/".join)
rows = st.lists(st.tuples(namespaces, st.sampled_from(["live", "superseded", "erased"])), min_size=1, max_size=10)


def _truncate(kernel):
    with kernel.engine.begin() as conn:
        conn.exec_driver_sql(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")


def _build_world(kernel, spec):
    expected_live: dict[str, str] = {}  # id -> namespace
    live_specs = [ns for ns, state in spec if state == "live"]
    if live_specs:
        for ns in sorted(set(live_specs)):
            n = live_specs.count(ns)
            for memory_id in kernel.ingest_texts(ns, ["omega marker row about Quill"] * n, label="prop"):
                expected_live[memory_id] = ns
    for ns, state in spec:
        if state == "superseded":
            old = kernel.remember(ns, "omega marker row about Quill, old version").id
            new = kernel.supersede(ns, old, "omega marker row about Quill, new version").id
            expected_live[new] = ns
        elif state == "erased":
            gone = kernel.remember(ns, "omega marker row about Quill, erased").id
            kernel.erase(ns, gone)
    for root in sorted({ns.split("/")[0] for ns, _ in spec}):
        kernel.add_entity(root, "Quill")
    for ns in sorted({ns for ns, _ in spec}):
        kernel.add_entity(ns, f"Agent {ns}")  # named after its namespace: a leak shows which one
    for ns, _ in spec:
        kernel.put_concept(ns, "omega/concept", f"omega marker concept of {ns}")
    return expected_live


@settings(max_examples=WORLDS, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(spec=rows, extra_callers=st.lists(namespaces, max_size=3))
def test_every_method_returns_exactly_the_visible_rows(kernel, spec, extra_callers):
    _truncate(kernel)
    live = _build_world(kernel, spec)
    concept_ns = {ns for ns, _ in spec}
    callers = sorted({ns for ns, _ in spec} | set(extra_callers)
                     | {"/".join(ns.split("/")[:-1]) for ns, _ in spec if "/" in ns})
    [embedding] = kernel.embedder.embed(["omega marker row about Quill"])
    for caller in callers:
        lineage = set(Namespace(caller).lineage())
        expected = {i for i, ns in live.items() if ns in lineage}
        scope = Scope(Namespace(caller))
        with kernel.index.reader() as reader:
            view = build_scoped_view(reader, scope, kernel.embedder)
            got = {
                "candidates": {c.ref for c in view.candidates(500)},
                "lexical": {c.ref for c in view.lexical_candidates("omega marker", 500)},
                "vector": {h.ref for h in view.vector_search(embedding, 500)},
                "entity_facts": {f.ref for f in view.entity_facts("who is quill", 2)},
                "fetch": set(reader.fetch(scope, list(live) + ["m_absent"])),
            }
            concepts = {c.content for c in view.concepts("omega marker concept", 50)}
            entities = {e.name for e in view.entities()}
            admitted = admitted_refs(view)
        for method, refs in got.items():
            assert refs == expected, (caller, method, spec)
        assert concepts == {f"omega marker concept of {ns}" for ns in concept_ns if ns in lineage}
        assert entities == ({f"Agent {ns}" for ns in concept_ns if ns in lineage}
                            | ({"Quill"} if caller.split("/")[0] in {ns.split("/")[0] for ns in concept_ns} else set()))
        assert admitted <= expected | {f"{ns}:omega/concept" for ns in lineage}
        CASES["cases"] += 1
    CASES["worlds"] += 1


def test_report_case_count():
    if CASES["worlds"] == 0:
        pytest.skip("property test did not run in this session")
    print(f"\nACL properties: {CASES['worlds']} worlds, {CASES['cases']} (world, caller) cases")
    assert CASES["cases"] >= (10_000 if FULL else 100)
