"""Exact scan or HNSW walk: vector_search picks per index group, and an exact scan finds the true
nearest neighbours of what the caller may read (and only that)."""
from contextlib import contextmanager

import numpy as np
import pytest
import sqlalchemy as sa

from halomem.index import Scope
from halomem.index.reader import scan_exactly
from halomem.types import Namespace

TREE = ("acme", "acme/eng", "acme/eng/infra", "acme/sales", "globex")
WORDS = "deploy billing oncall quasar vendor rota invoice pipeline telescope contract".split()


def test_the_choice_follows_the_cost_of_each_path():
    # a small lineage in a large shared index, a wide lane: the filtered walk visits most of it
    assert scan_exactly(group_rows=9_000, index_rows=50_000, ef_search=200)
    # the same lineage, a narrow lane: the walk is short
    assert not scan_exactly(group_rows=9_000, index_rows=50_000, ef_search=40)
    # a namespace with its own index (nothing filtered out) walks it unless it is tiny
    assert not scan_exactly(group_rows=62_000, index_rows=62_000, ef_search=200)
    assert scan_exactly(group_rows=300, index_rows=300, ef_search=40)
    assert scan_exactly(group_rows=0, index_rows=1_000_000, ef_search=40)  # nothing to read


@pytest.mark.parametrize("rows,index", [(500, 1_000_000), (5_000, 100_000), (60_000, 60_000)])
def test_a_wider_lane_never_turns_an_exact_scan_into_a_walk(rows, index):
    choices = [scan_exactly(rows, index, ef) for ef in (40, 100, 200, 400, 1000)]
    assert choices == sorted(choices)  # False ... then True


@contextmanager
def _statements(kernel):
    """The SQL the kernel's engine sends inside the block."""
    sent = []
    listen = lambda *args: sent.append(args[2])  # noqa: E731
    sa.event.listen(kernel.index.engine, "before_cursor_execute", listen)
    try:
        yield sent
    finally:
        sa.event.remove(kernel.index.engine, "before_cursor_execute", listen)


def _store(kernel):
    rng = np.random.default_rng(5)
    for ns in TREE:
        kernel.ingest_texts(ns, [" ".join(rng.choice(WORDS, size=6)) + f" {ns} {i}" for i in range(40)],
                            label="test")


def test_an_exact_scan_returns_the_true_neighbours_of_visible_rows_only(kernel):
    _store(kernel)
    with _statements(kernel) as captured:
        for caller in ("acme/eng/infra", "acme/sales", "globex"):
            scope = Scope(Namespace(caller))
            [query] = kernel.embedder.embed(["quasar telescope pipeline"])
            with kernel.index.reader() as reader:
                hits = reader.vector_search(scope, query, 60)
                rows = reader.conn.execute(sa.text(
                    "SELECT id, content FROM memories WHERE namespace = ANY(:lineage) AND t_valid_to IS NULL"
                    " AND erased_at IS NULL"), {"lineage": Namespace(caller).lineage()}).all()
            vectors = np.array(kernel.embedder.embed([c for _, c in rows]))
            cosine = vectors @ np.array(query) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
            truth = sorted(zip(rows, cosine), key=lambda x: (-round(float(x[1]), 5), x[0][0]))[:60]
            assert [round(h.score, 5) for h in hits] == [round(float(c), 5) for _, c in truth]
            assert {h.ref for h in hits} <= {r.id for r in rows}
    probes = [sql for sql in captured if "cosine_distance(" in sql]
    assert probes and all("<=>" not in sql for sql in probes)  # scanned, not walked


def test_a_namespace_with_its_own_index_is_walked(kernel):
    kernel.ingest_texts("acme/big", [f"routine note {i} about the build queue" for i in range(900)], label="test")
    kernel.index_namespace("acme/big")
    [query] = kernel.embedder.embed(["build queue"])
    with _statements(kernel) as captured, kernel.index.reader() as reader:
        hits = reader.vector_search(Scope(Namespace("acme/big")), query, 10)
    assert len(hits) == 10
    [lane] = [sql for sql in captured if "memories.embedding" in sql and "ORDER BY" in sql]
    probe, passages = lane.split(" UNION ALL SELECT passage.")  # the memories' own vectors, then passages'
    # acme/big walks its own index; its empty ancestor acme is scanned
    assert probe.count("<=>") == 2 and probe.count("cosine_distance(") == 2  # each in SELECT and ORDER BY
    assert "passages.embedding <=>" in passages  # the lineage's passages walked too
