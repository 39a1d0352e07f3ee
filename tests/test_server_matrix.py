"""Generated cross-tenant matrix: random namespace trees x principals at every depth x every REST
endpoint and MCP tool x target (own, ancestor, sibling, descendant, look-alike prefix) x scope.

Each case is checked against the rule stated independently here (not by calling halomem.auth):
exactly the allowed outcome, no sibling or descendant row in any response, and every refused
write leaves the memories table byte-for-byte unchanged.
"""
import os
import random
from dataclasses import dataclass

import httpx2
import pytest

from tests.conftest import make_token
from tests.mcp_client import McpSession
from tests.serving import bearer
from tests.test_server_http import memories_digest

FULL = os.environ.get("HALOMEM_TEST_PROFILE") == "full"
TREES = 6 if FULL else 2
SCOPE_SETS = (["read"], ["write"], ["read", "write"], ["admin"], ["read", "write", "admin"]) if FULL \
    else (["read"], ["write"], ["read", "write", "admin"])
CASES_RUN = {"rest": 0, "mcp": 0}


def lineage(ns: str) -> list[str]:
    parts = ns.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def relation(caller: str, target: str) -> str:
    if target == caller:
        return "own"
    if target in lineage(caller):
        return "ancestor"
    if target.startswith(caller + "/"):
        return "descendant"
    if target.startswith(caller):
        return "look-alike"
    return "sibling"


def random_tree(rng: random.Random) -> list[str]:
    root = rng.choice(["acme", "corp", "org"])
    spaces = {root, root + "-eng", root + "x"}  # look-alike prefixes of the root
    frontier = [root]
    while frontier and len(spaces) < 9:
        parent = frontier.pop(0)
        for name in rng.sample(["eng", "sales", "ops", "eng-infra", "k8s", "eu"], rng.randint(1, 3)):
            child = f"{parent}/{name}"
            if child.count("/") < 3:
                spaces.add(child)
                frontier.append(child)
                spaces.add(f"{parent}/{name}x")  # a look-alike sibling of that child
    return sorted(spaces)


@dataclass
class World:
    namespaces: list[str]
    canary: dict[str, str]  # namespace -> id of its fixed canary row
    word: dict[str, str]  # namespace -> its canary's unique word


def seed(kernel, namespaces: list[str], rng: random.Random) -> World:  # noqa: ANN001
    canary, word = {}, {}
    for ns in namespaces:
        w = "canary" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(10))
        word[ns] = w
        canary[ns] = kernel.remember(ns, f"{w} secret of {ns}", source=f"src-{ns}").id
    return World(namespaces, canary, word)


def expect(scopes: list[str], op: str, rel: str) -> str:
    """The outcome the README's rules give, independently of halomem.auth."""
    needs = {"search": "read", "history": "read", "remember": "write", "supersede": "write", "erase": "write",
             "policy_get": "admin", "policy_set": "admin", "audit": "admin", "tokens": "admin",
             "entities": "read"}[op]
    if needs not in scopes:
        return "forbidden"
    if op in ("history",):
        return "ok" if rel in ("own", "ancestor") else "not_found"
    if op in ("supersede", "erase"):
        return {"own": "ok", "ancestor": "forbidden"}.get(rel, "not_found")
    if op in ("policy_get", "policy_set"):
        return "ok" if rel in ("own", "descendant") else "forbidden"
    return "ok"


def outcome_rest(response: httpx2.Response) -> str:
    return {200: "ok", 201: "ok", 403: "forbidden", 404: "not_found"}.get(response.status_code,
                                                                          f"http {response.status_code}")


def outcome_mcp(ok: bool, payload) -> str:  # noqa: ANN001
    if ok:
        return "ok"
    text = str(payload)
    for kind, name in (("permission denied", "forbidden"), ("not found", "not_found")):
        if text.startswith(kind):
            return name
    return "error: " + text[:120]


def assert_no_leak(text: str, caller: str, world: World, *, ids: bool = True, ids_below: bool = False) -> None:
    """No content of a row outside the caller's lineage; nor its id, unless the caller named it or
    (``ids_below``: the audit trail an admin reads, ids and counts only) it is of the caller's subtree."""
    for ns in world.namespaces:
        if ns not in lineage(caller):
            assert world.word[ns] not in text, f"{caller} saw a row of {ns}"
            below = ns.startswith(caller + "/")
            assert not ids or (ids_below and below) or world.canary[ns] not in text, f"{caller} saw id of {ns}"


def victim_for(kernel, op: str, caller: str, target: str, world: World) -> str:  # noqa: ANN001
    """The row a targeted write aims at: the target's canary, or a fresh row of the caller's own
    (so allowed supersedes and erases do not use up the canary). Made before the digest is taken."""
    if op in ("supersede", "erase") and target == caller:
        return kernel.remember(caller, f"fresh {world.word[caller]}").id
    return world.canary[target]


def run_rest(http: httpx2.Client, op: str, caller: str, target: str, world: World, victim: str):  # noqa: ANN001
    if op == "search":
        return http.post("/v1/search", json={"query": world.word[target], "k": 50, "token_budget": 100000})
    if op == "history":
        return http.get(f"/v1/memories/{world.canary[target]}/history")
    if op == "remember":
        return http.post("/v1/memories", json={"content": f"note from {caller}"})
    if op in ("supersede", "erase"):
        if op == "supersede":
            return http.post(f"/v1/memories/{victim}/supersede", json={"content": "replaced"})
        return http.post(f"/v1/memories/{victim}/erase", json={"reason": "matrix"})
    if op == "policy_get":
        return http.get(f"/v1/policies/{target}")
    if op == "policy_set":
        return http.put(f"/v1/policies/{target}", json={"retriever": "baseline"})
    if op == "audit":
        return http.get("/v1/audit", params={"n": 500})
    if op == "tokens":
        return http.get("/v1/tokens")
    if op == "entities":
        return http.get("/v1/entities")
    raise AssertionError(op)


MCP_OPS = ("search", "history", "remember", "supersede", "erase")


def run_mcp(session: McpSession, op: str, caller: str, target: str, world: World, victim: str):  # noqa: ANN001
    if op == "search":
        return session.call("search", {"query": world.word[target], "k": 50, "token_budget": 100000})
    if op == "history":
        return session.call("history", {"id": world.canary[target]})
    if op == "remember":
        return session.call("remember", {"content": f"mcp note from {caller}"})
    if op == "supersede":
        return session.call("supersede", {"id": victim, "content": "replaced"})
    return session.call("erase", {"id": victim, "reason": "matrix"})


WRITES = {"remember", "supersede", "erase", "policy_set"}
TARGETED = {"history", "supersede", "erase", "policy_get", "policy_set", "search"}


def check_payload(op: str, caller: str, target: str, rel: str, body, world: World) -> None:  # noqa: ANN001
    text = str(body["hits"] if op == "search" else body)  # a search echoes its query: judge the hits
    assert_no_leak(text, caller, world, ids_below=op == "audit")  # admin reads its subtree's trail (README)
    if op == "search":
        assert all(h["namespace"] in lineage(caller) for h in body["hits"])
        found = world.word[target] in text
        assert found == (rel in ("own", "ancestor")), (caller, target, rel)
    if op == "audit":
        for row in body["rows"]:
            assert row["actor_ns"] == caller or row["actor_ns"].startswith(caller + "/"), row
    if op == "tokens":
        for t in body["tokens"]:
            assert t["namespace"] == caller or t["namespace"].startswith(caller + "/")


@pytest.mark.parametrize("tree_seed", range(TREES))
def test_cross_tenant_matrix(api_server, kernel, tree_seed):
    rng = random.Random(1000 + tree_seed)
    namespaces = random_tree(rng)
    world = seed(kernel, namespaces, rng)
    callers = namespaces if FULL else rng.sample(namespaces, min(5, len(namespaces)))
    rest_ops = ("search", "history", "remember", "supersede", "erase", "policy_get", "policy_set", "audit",
                "tokens", "entities")
    for caller in callers:
        targets = {relation(caller, t): t for t in namespaces}  # one target per relation
        for scopes in SCOPE_SETS:
            token = make_token(kernel, caller, ",".join(scopes))
            session = McpSession(api_server.url, token)
            try:
                with httpx2.Client(base_url=api_server.url, headers=bearer(token), timeout=60) as http:
                    for op in rest_ops:
                        for rel, target in (targets.items() if op in TARGETED else [("own", caller)]):
                            victim = victim_for(kernel, op, caller, target, world)
                            before = memories_digest(kernel) if op in WRITES else None
                            response = run_rest(http, op, caller, target, world, victim)
                            got, want = outcome_rest(response), expect(scopes, op, rel)
                            assert got == want, (op, caller, target, rel, scopes, response.text[:300])
                            if got == "ok":
                                check_payload(op, caller, target, rel, response.json(), world)
                            else:
                                assert_no_leak(response.text, caller, world, ids=False)
                                if before is not None:
                                    assert memories_digest(kernel) == before, ("refused write changed", op)
                            CASES_RUN["rest"] += 1
                for op in MCP_OPS:
                    for rel, target in (targets.items() if op in TARGETED else [("own", caller)]):
                        victim = victim_for(kernel, op, caller, target, world)
                        before = memories_digest(kernel) if op in WRITES else None
                        ok, payload = run_mcp(session, op, caller, target, world, victim)
                        got, want = outcome_mcp(ok, payload), expect(scopes, op, rel)
                        assert got == want, ("mcp", op, caller, target, rel, scopes, str(payload)[:300])
                        if ok:
                            check_payload(op, caller, target, rel, payload, world)
                        else:
                            assert_no_leak(str(payload), caller, world, ids=False)
                            if before is not None:
                                assert memories_digest(kernel) == before
                        CASES_RUN["mcp"] += 1
            finally:
                session.close()
    print(f"\ncross-tenant matrix tree {tree_seed}: {len(namespaces)} namespaces, {len(callers)} callers, "
          f"cases so far rest={CASES_RUN['rest']} mcp={CASES_RUN['mcp']}")
    assert CASES_RUN["rest"] > 0 and CASES_RUN["mcp"] > 0
