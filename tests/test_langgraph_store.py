"""The released langgraph package against a live server: HalomemStore is a real BaseStore (put,
get, search by meaning, filters, delete, list_namespaces, batch), its async twin answers the same,
the token's namespace bounds everything a store can reach, a put of the same key supersedes with
history kept, a delete erases, and a compiled graph reads and writes memories in a node."""
from __future__ import annotations

import asyncio

import pytest
from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from halomem_client import Client
from halomem_client.langgraph import AsyncHalomemStore, HalomemStore, memory_key
from tests.conftest import count, make_token


@pytest.fixture()
def stores(api_server, kernel):
    opened = []

    def store(ns: str, scopes: str = "read,write") -> HalomemStore:
        made = HalomemStore(url=api_server.url, token=make_token(kernel, ns, scopes))
        opened.append(made)
        return made

    yield store
    for made in opened:
        made.close()


def test_put_get_search_delete_and_namespaces(stores, kernel):
    store = stores("acme/eng")
    assert isinstance(store, BaseStore)
    store.put(("users", "u1"), "prefs", {"content": "Prefers dark mode in every editor", "topic": "ui"})
    store.put(("users", "u1"), "lang", {"content": "Writes Rust at work and Python at home", "topic": "code"})
    store.put(("users", "u2"), "prefs", {"content": "Prefers dark mode in every editor", "topic": "ui"})
    store.put(("docs",), "deploy", {"text": "Deploys go through ArgoCD canaries", "owner": "platform"})
    item = store.get(("users", "u1"), "prefs")
    assert item.value == {"content": "Prefers dark mode in every editor", "topic": "ui"}
    assert item.namespace == ("users", "u1") and item.key == "prefs"
    twin = store.get(("users", "u2"), "prefs")  # the same text under another key: an item of its own
    assert twin is not None and twin.value == item.value and store.get(("users", "u3"), "prefs") is None

    found = store.search(("users",), query="does the user prefer dark mode", limit=5)
    assert found and found[0].key == "prefs" and found[0].score is not None and 0 < found[0].score <= 1
    assert {h.namespace for h in found} <= {("users", "u1"), ("users", "u2")}  # the prefix holds
    assert all(h.namespace == ("users", "u1") for h in store.search(("users", "u1"), query="dark mode editor"))
    assert [h.key for h in store.search(("users",), query="which languages does the user write", filter={"topic": "code"})] == ["lang"]
    assert [h.key for h in store.search(("docs",))] == ["deploy"]  # no query: the newest items
    assert store.search(("users",), filter={"topic": {"$ne": "ui"}})[0].key == "lang"

    assert store.list_namespaces() == [("docs",), ("users", "u1"), ("users", "u2")]
    assert store.list_namespaces(prefix=("users",)) == [("users", "u1"), ("users", "u2")]
    assert store.list_namespaces(max_depth=1) == [("docs",), ("users",)]
    assert store.list_namespaces(suffix=("u2",)) == [("users", "u2")]

    store.delete(("users", "u1"), "lang")
    assert store.get(("users", "u1"), "lang") is None
    assert count(kernel, "SELECT count(*) FROM memories WHERE erased_at IS NOT NULL") == 1
    assert count(kernel, "SELECT count(*) FROM memories WHERE content LIKE '%Rust at work%'"
                         " OR provenance::text LIKE '%Rust at work%'") == 0  # erased for good, value and all


def test_a_put_of_the_same_key_supersedes_and_history_is_kept(stores, api_server, kernel):
    token = make_token(kernel, "acme/eng", "read,write")
    store = HalomemStore(url=api_server.url, token=token)
    store.put(("team",), "oncall", {"content": "Priya is on call this week"})
    first = store.get(("team",), "oncall")
    store.put(("team",), "oncall", {"content": "Priya is on call this week"})  # unchanged: nothing written
    store.put(("team",), "oncall", {"content": "Marco is on call this week"})
    now = store.get(("team",), "oncall")
    assert now.value == {"content": "Marco is on call this week"} and now.created_at == first.created_at
    assert now.updated_at > first.updated_at
    with Client(api_server.url, token) as hm:
        live = hm.recent(keys=[memory_key(("team",), "oncall")]).memories
        assert len(live) == 1
        chain = hm.history(live[0].id)
    assert [r.content for r in chain] == ["Priya is on call this week", "Marco is on call this week"]
    assert chain[0].t_valid_to is not None and chain[1].t_valid_to is None
    assert [h.value["content"] for h in store.search(("team",), query="who is on call")] == ["Marco is on call this week"]
    store.close()


def test_the_token_bounds_what_a_store_reaches(stores):
    eng, sales = stores("acme/eng"), stores("acme/sales")
    alice, bob = stores("acme/users/alice"), stores("acme/users/bob")
    org = stores("acme")
    org.put(("policies",), "travel", {"content": "Book travel through the Navan portal"})
    eng.put(("runbooks",), "deploy", {"content": "Deploys go through ArgoCD canaries"})
    sales.put(("runbooks",), "deploy", {"content": "Quotes above 50k need a second signature"})
    alice.put(("memories",), "pet", {"content": "Alice has a cat named Miso"})
    bob.put(("memories",), "pet", {"content": "Bob has a parrot named Kiwi"})

    assert eng.get(("runbooks",), "deploy").value["content"] == "Deploys go through ArgoCD canaries"
    assert sales.get(("runbooks",), "deploy").value["content"] == "Quotes above 50k need a second signature"
    assert "Quotes" not in str([h.value for h in eng.search(("runbooks",), query="quotes second signature")])
    assert alice.get(("memories",), "pet").value["content"].startswith("Alice")
    assert bob.get(("memories",), "pet").value["content"].startswith("Bob")
    assert all("Bob" not in h.value["content"] for h in alice.search(("memories",), query="parrot named Kiwi"))
    assert alice.list_namespaces() == [("memories",), ("policies",)]  # its own and its ancestors' labels
    # an ancestor's item is visible, read-only: a put writes the token's own copy, the org's stays
    assert alice.get(("policies",), "travel").value["content"].startswith("Book travel")
    alice.put(("policies",), "travel", {"content": "Alice books her own trains"})
    assert alice.get(("policies",), "travel").value["content"] == "Alice books her own trains"
    assert org.get(("policies",), "travel").value["content"].startswith("Book travel")
    assert bob.get(("policies",), "travel").value["content"].startswith("Book travel")
    reader = stores("acme/eng", "read")
    with pytest.raises(Exception) as refused:
        reader.put(("runbooks",), "deploy", {"content": "overwritten"})
    assert "write" in str(refused.value).lower()
    assert eng.get(("runbooks",), "deploy").value["content"] == "Deploys go through ArgoCD canaries"


def test_long_keys_and_a_delete_that_lost_a_race(stores, kernel):
    store = stores("acme/eng")
    space, key = ("users", "x" * 120), "k" * 150  # past the server's 200-character key: stored by digest
    store.put(space, key, {"content": "A long-keyed item"})
    assert store.get(space, key).value == {"content": "A long-keyed item"} and store.get(space, key).key == key
    store.put(space, key, {"content": "A long-keyed item, updated"})
    assert [i.value["content"] for i in store.search(space)] == ["A long-keyed item, updated"]
    item = kernel.recent("acme/eng", 5).memories[0]
    kernel.erase("acme/eng", item.id, reason="erased under the store")  # the store's next delete finds nothing
    store.delete(space, key)
    assert store.get(space, key) is None

    from halomem_client import NotFoundError
    from halomem_client import operations as calls
    from halomem_client.langgraph import drive

    def steps():  # a call's error reaches the steps, which may carry on
        try:
            yield calls.get("m_missing0000000000000")
        except NotFoundError:
            return (yield calls.whoami())["namespace"]
    assert drive(store.client, steps()) == "acme/eng"


def test_batch_and_the_async_twin(stores, api_server, kernel):
    store = stores("acme/ops")
    results = store.batch([PutOp(("notes",), "a", {"content": "The status page is status.acme.test"}),
                           GetOp(("notes",), "a"),
                           SearchOp(("notes",), query="where is the status page", limit=3)])
    assert results[0] is None and results[1].value["content"].startswith("The status page")
    assert results[2][0].key == "a"
    token = make_token(kernel, "acme/ops", "read,write")

    async def run():
        twin = AsyncHalomemStore(url=api_server.url, token=token)
        await twin.aput(("notes",), "b", {"content": "Pager duty rotates on Mondays"})
        got = await twin.aget(("notes",), "b")
        found = await twin.asearch(("notes",), query="when does the pager rotate")
        spaces = await twin.alist_namespaces()
        await twin.adelete(("notes",), "b")
        gone = await twin.aget(("notes",), "b")
        await twin.aclose()
        return got, found, spaces, gone

    got, found, spaces, gone = asyncio.run(run())
    assert got.value["content"] == "Pager duty rotates on Mondays" and found[0].key == "b"
    assert spaces == [("notes",)] and gone is None
    assert asyncio.run(store.aget(("notes",), "a")).key == "a"  # the sync store awaits too


def test_a_compiled_graph_reads_and_writes_memories_in_a_node(stores):
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    store = stores("acme/support")

    class State(TypedDict):
        user: str
        message: str
        recalled: list[str]

    def remember_and_recall(state: State, *, store: BaseStore) -> dict:
        space = ("users", state["user"])
        if state["message"].startswith("remember: "):
            store.put(space, str(len(store.search(space)) + 1), {"content": state["message"][len("remember: "):]})
        return {"recalled": [h.value["content"] for h in store.search(space, query=state["message"], limit=3)]}

    graph = StateGraph(State)
    graph.add_node("memory", remember_and_recall)
    graph.add_edge(START, "memory")
    graph.add_edge("memory", END)
    app = graph.compile(store=store)
    app.invoke({"user": "kim", "message": "remember: my laptop is a ThinkPad X1", "recalled": []})
    app.invoke({"user": "lee", "message": "remember: my laptop is a MacBook Air", "recalled": []})
    out = app.invoke({"user": "kim", "message": "which laptop do I use?", "recalled": []})
    assert out["recalled"] == ["my laptop is a ThinkPad X1"]  # kim's memory, never lee's
