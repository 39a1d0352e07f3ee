"""A large namespace's own partial indexes: same answers, never wider, and the planner can use them."""
import json

import pytest

from halomem.db.schema import namespace_index_names
from halomem.index import Scope
from halomem.types import Namespace

TREE = ("acme", "acme/eng", "acme/eng/infra", "acme/sales", "globex")
CALLERS = ("acme", "acme/eng", "acme/eng/infra", "acme/sales")


@pytest.fixture()
def corpus(kernel):
    topics = ["deploy pipeline", "billing invoice", "oncall rota", "quasar telescope", "vendor contract"]
    for ns in TREE:
        kernel.ingest_texts(ns, [f"{ns} note {i}: {topics[i % 5]} and {topics[(i * 3) % 5]} review"
                                 for i in range(24)], label="test")
    return kernel


def _answers(kernel, caller, query="quasar telescope review deploy"):
    scope = Scope(Namespace(caller))
    [embedding] = kernel.embedder.embed([query])
    with kernel.index.reader() as reader:
        vector = [(h.ref, round(h.score, 6)) for h in reader.vector_search(scope, embedding, 200)]
        lexical = [c.ref for c in reader.lexical_candidates(scope, query, 500)]
    return sorted(vector), sorted(lexical)


def test_answers_are_the_same_with_namespace_indexes(corpus):
    before = {caller: _answers(corpus, caller) for caller in CALLERS}
    assert corpus.index_namespace("acme") and corpus.index_namespace("acme/eng")
    assert corpus.namespace_indexes() == ["acme", "acme/eng"]
    after = {caller: _answers(corpus, caller) for caller in CALLERS}
    assert after == before
    assert len(after["acme/eng/infra"][0]) == 72  # every visible row: three namespaces of 24


def test_indexed_siblings_and_descendants_never_widen_a_caller(corpus):
    for ns in TREE:
        corpus.index_namespace(ns)
    vector, lexical = _answers(corpus, "acme/eng")
    with corpus.engine.connect() as conn:
        rows = dict(conn.exec_driver_sql("SELECT id, namespace FROM memories").fetchall())
    assert {rows[ref] for ref, _ in vector} == {"acme", "acme/eng"}
    assert {rows[ref] for ref in lexical} == {"acme", "acme/eng"}


def test_the_planner_uses_a_namespace_index(kernel):
    """The probes spell the namespace so that it implies the partial indexes' predicate."""
    import sqlalchemy as sa

    filler = [f"routine standup note {i} about the build queue" for i in range(4800)]
    kernel.ingest_texts("globex", filler[:4000], label="test")  # the shared indexes are mostly others' rows
    kernel.ingest_texts("acme", ["parent note about the quasar"], label="test")
    kernel.ingest_texts("acme/big", filler[4000:] + ["the quasar telescope was serviced"], label="test")
    kernel.index_namespace("acme/big")
    with kernel.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("ANALYZE memories")
    vec, tsv = namespace_index_names("acme/big")
    captured = []

    def capture(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        captured.append((statement, parameters))

    sa.event.listen(kernel.index.engine, "before_cursor_execute", capture)
    try:
        scope = Scope(Namespace("acme/big"))
        [embedding] = kernel.embedder.embed(["quasar telescope"])
        with kernel.index.reader() as reader:
            mark = len(captured)
            hits = reader.vector_search(scope, embedding, 5)
            vector_sql = next(c for c in captured[mark:] if "passages" not in c[0])  # the memories probe
            found = reader.lexical_candidates(scope, "quasar telescope", 50)
            lexical_sql = captured[-1]
            # the property: the partial indexes are usable (their predicate implied). Whether the planner
            # prefers them at this size is its cost model's call (PostgreSQL 16 sorts 801 rows exactly,
            # 18 walks the index), so sorting is priced out for the EXPLAIN
            reader.conn.exec_driver_sql("SET LOCAL enable_sort = off")
            plans = ["\n".join(r[0] for r in reader.conn.exec_driver_sql("EXPLAIN " + sql, params))
                     for sql, params in (vector_sql, lexical_sql)]
    finally:
        sa.event.remove(kernel.index.engine, "before_cursor_execute", capture)
    with kernel.engine.connect() as conn:
        version = int(conn.exec_driver_sql("SHOW server_version_num").scalar())
    if version < 180000 and vec not in plans[0]:  # known, open (issue 27's note): measured on 16, not yet solved
        pytest.xfail("PostgreSQL < 18 does not use a namespace's partial HNSW index for this probe")
    assert vec in plans[0] and tsv in plans[1]
    assert hits[0].content == "the quasar telescope was serviced"
    assert {c.content for c in found} == {"the quasar telescope was serviced", "parent note about the quasar"}


def test_create_and_drop_are_idempotent_and_writes_keep_working(corpus):
    assert corpus.index_namespace("acme/eng") is True
    assert corpus.index_namespace("acme/eng") is False
    new = corpus.remember("acme/eng", "the quasar telescope moved to the new dome")
    assert new.id in {h.ref for h in corpus.search("acme/eng", "quasar telescope dome", k=5).hits}
    replaced = corpus.supersede("acme/eng", new.id, "the quasar telescope moved back to the old dome")
    found = {h.ref for h in corpus.search("acme/eng", "quasar telescope dome", k=50).hits}
    assert replaced.id in found and new.id not in found
    assert corpus.drop_namespace_index("acme/eng") is True
    assert corpus.drop_namespace_index("acme/eng") is False
    assert corpus.namespace_indexes() == []


def test_index_cli(cli, corpus):
    made = cli("index", "create", "--ns", "acme/eng", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout) == {"namespace": "acme/eng", "created": True}
    assert json.loads(cli("index", "list", "--json").stdout) == {"namespaces": ["acme/eng"]}
    bad = cli("index", "create", "--ns", "acme//eng")
    assert bad.returncode == 3 and bad.stderr.count("\n") == 1 and "empty segment" in bad.stderr
    gone = cli("index", "drop", "--ns", "acme/eng", "--json")
    assert json.loads(gone.stdout) == {"namespace": "acme/eng", "dropped": True}


def test_readers_share_what_they_learn_of_namespace_indexes(corpus):
    """The catalog is asked once per namespace and TTL, not on every plan(); this process's own
    create and drop are seen at once, another process's within the TTL."""
    import sqlalchemy as sa

    from halomem.db.migrations import drop_namespace_indexes
    from halomem.index.catalog import NamespaceIndexCatalog

    asked = []

    def count(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        if "pg_index" in statement:
            asked.append(parameters)

    sa.event.listen(corpus.index.engine, "before_cursor_execute", count)
    try:
        before = _answers(corpus, "acme/eng")
        for _ in range(3):
            assert _answers(corpus, "acme/eng") == before
        assert len(asked) == 1  # the first reader asked; the next three knew
        assert corpus.index_namespace("acme/eng")
        assert _answers(corpus, "acme/eng") == before
        assert len(asked) == 2  # our own create was seen at once
        with corpus.index.engine.connect() as conn:
            assert corpus.index.catalog.own_indexes(conn, ["acme", "acme/eng"]) == {"acme": False, "acme/eng": True}
    finally:
        sa.event.remove(corpus.index.engine, "before_cursor_execute", count)

    now = [0.0]
    catalog = NamespaceIndexCatalog(ttl=30.0, clock=lambda: now[0])
    with corpus.engine.connect() as conn:
        assert catalog.own_indexes(conn, ["acme/eng"]) == {"acme/eng": True}
    with corpus.engine.begin() as conn:  # as another process would: dropped behind the catalogs' back
        assert drop_namespace_indexes(conn, Namespace("acme/eng"))
    with corpus.engine.connect() as conn:
        now[0] = 29.0
        assert catalog.own_indexes(conn, ["acme/eng"]) == {"acme/eng": True}  # still believed
        now[0] = 31.0
        assert catalog.own_indexes(conn, ["acme/eng"]) == {"acme/eng": False}  # noticed after the TTL
    with corpus.engine.connect() as conn:  # the kernel's catalog still believes in the dropped indexes
        assert corpus.index.catalog.own_indexes(conn, ["acme/eng"]) == {"acme/eng": True}
    assert _answers(corpus, "acme/eng") == before  # a stale belief changes the speed, not the answers
