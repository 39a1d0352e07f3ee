"""The ACL: ancestors visible; siblings, descendants, superseded and erased rows never."""
import pytest

from halomem.index import Scope
from halomem.types import Namespace


@pytest.fixture()
def tree(kernel):
    ids = {}
    for ns in ("acme", "acme/eng", "acme/eng/infra", "acme/sales", "globex", "acme-eng"):
        ids[ns] = kernel.remember(ns, f"shared marker quasar fact of {ns}").id
    return ids


def _visible_ids(kernel, ns, method="candidates"):
    scope = Scope(Namespace(ns))
    with kernel.index.reader() as r:
        if method == "candidates":
            return {c.ref for c in r.candidates(scope, 500)}
        if method == "lexical":
            return {c.ref for c in r.lexical_candidates(scope, "quasar marker", 500)}
        if method == "vector":
            [e] = kernel.embedder.embed(["shared marker quasar fact"])
            return {h.ref for h in r.vector_search(scope, e, 500)}
    raise AssertionError(method)


@pytest.mark.parametrize("method", ["candidates", "lexical", "vector"])
def test_caller_sees_self_and_ancestors_only(kernel, tree, method):
    assert _visible_ids(kernel, "acme/eng", method) == {tree["acme"], tree["acme/eng"]}
    assert _visible_ids(kernel, "acme", method) == {tree["acme"]}
    assert _visible_ids(kernel, "acme/eng/infra", method) == {tree["acme"], tree["acme/eng"], tree["acme/eng/infra"]}
    # a namespace that shares a string prefix is not an ancestor
    assert _visible_ids(kernel, "acme-eng", method) == {tree["acme-eng"]}


def test_search_never_returns_sibling_or_descendant(kernel, tree):
    for driver in ("baseline", "fusion", "graph", "keyword"):
        result = kernel.search("acme/eng", "quasar marker fact", k=50, driver=driver)
        assert {h.ref for h in result.hits} == {tree["acme"], tree["acme/eng"]}


def test_superseded_and_erased_rows_are_never_returned(kernel):
    old = kernel.remember("acme/eng", "the build server is jenkins-01").id
    new = kernel.supersede("acme/eng", old, "the build server is jenkins-02").id
    gone = kernel.remember("acme/eng", "the build server password hint is walrus").id
    kernel.erase("acme/eng", gone, reason="leaked secret")
    scope = Scope(Namespace("acme/eng"))
    [e] = kernel.embedder.embed(["build server"])
    with kernel.index.reader() as r:
        seen = ({c.ref for c in r.candidates(scope, 100)} | {c.ref for c in r.lexical_candidates(scope, "build server", 100)}
                | {h.ref for h in r.vector_search(scope, e, 100)} | set(r.fetch(scope, [old, new, gone])))
    assert seen == {new}
    for driver in ("baseline", "fusion", "graph", "keyword"):
        assert [h.ref for h in kernel.search("acme/eng", "build server password", driver=driver).hits] == [new]


def test_source_scoping_narrows_and_concepts_fail_closed(kernel):
    a = kernel.remember("acme", "release train leaves on tuesday", source="wiki").id
    kernel.remember("acme", "release train notes from slack", source="slack")
    kernel.put_concept("acme", "process/release", "release train process overview")
    scoped = kernel.search("acme", "release train", sources=["wiki"])
    assert [h.ref for h in scoped.hits] == [a]
    unscoped = kernel.search("acme", "release train", k=10)
    assert any(h.tier == "L3" and h.ref == "acme:process/release" for h in unscoped.hits)


def test_history_keeps_chain_but_respects_namespace(kernel):
    old = kernel.remember("acme/eng", "on-call rotation is weekly").id
    new = kernel.supersede("acme/eng", old, "on-call rotation is biweekly").id
    chain = kernel.history("acme/eng", new)
    assert [r.id for r in chain] == [old, new]
    assert chain[0].t_valid_to is not None and chain[1].t_valid_to is None
    from halomem.errors import NotFoundError

    with pytest.raises(NotFoundError):
        kernel.history("acme/sales", new)
    with pytest.raises(NotFoundError):
        kernel.history("acme", new)  # a parent does not see its descendants


def test_within_narrows_inside_the_lineage_and_never_widens(kernel, tree):
    import sqlalchemy as sa

    from halomem.db.schema import memories
    from halomem.index.acl import visible

    scope = Scope(Namespace("acme/eng"))

    def ids(within):
        with kernel.engine.connect() as conn:
            return set(conn.execute(sa.select(memories.c.id).where(visible(memories, scope, within=within))).scalars())

    assert ids("acme") == {tree["acme"]}
    assert ids("acme/eng") == {tree["acme/eng"]}
    for outside in ("acme/eng/infra", "acme/sales", "globex", "acme-eng", ""):
        assert ids(outside) == set()  # a descendant, sibling or stranger: nothing, not its rows
    assert ids(["acme", "acme/sales", "acme/eng/infra"]) == {tree["acme"]}  # only the lineage's part counts
    assert ids(["globex", "acme/sales"]) == set()
