"""Every response field, differentially: nothing a caller receives may depend on rows outside its
read ACL.

For random namespace trees with look-alike prefixes, the same script of requests (every REST route
a read/write principal may call and every MCP tool, reads and writes, successes and refusals) runs
twice from the same starting state, once as it is and once after rows, entities, concepts,
policies and tokens were added everywhere the caller cannot read (siblings, descendants,
look-alike prefixes), all naming the words the script uses. The two transcripts (status, every
body field, counts included) must be equal once the values that differ by construction are
normalized (fresh ids by order of appearance, request ids, times, elapsed milliseconds). Any other
difference is a field that depends on rows the caller cannot read.
"""
from __future__ import annotations

import json
import os
import random
import re

import httpx2
import pytest
import sqlalchemy as sa

from tests.conftest import TABLES, make_token
from tests.mcp_client import McpSession
from tests.serving import bearer
from tests.test_server_matrix import lineage, random_tree

FULL = os.environ.get("HALOMEM_TEST_PROFILE") == "full"
TREES = 4 if FULL else 2
CALLERS = 4 if FULL else 2
WORDS = ("zephyr", "quorum", "lantern")
CASES = {"requests": 0, "worlds": 0}


def reset(kernel) -> None:  # noqa: ANN001
    with kernel.engine.begin() as conn:
        conn.exec_driver_sql(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
    kernel.index.catalog.forget()


def build(kernel, namespaces: list[str], caller: str, perturb: bool) -> dict[str, str]:  # noqa: ANN001
    """The starting state: one row per namespace naming every word; with ``perturb``, more of
    everything where ``caller`` cannot read. Returns namespace -> its first row's id."""
    reset(kernel)
    first = {ns: kernel.remember(ns, f"{' '.join(WORDS)} note of {ns}", source="doc").id for ns in namespaces}
    if perturb:
        outside = [ns for ns in namespaces if ns not in lineage(caller)]
        for i, ns in enumerate(outside):
            for j in range(3):
                kernel.remember(ns, f"{WORDS[j]} {WORDS[(j + 1) % 3]} extra {i}-{j} Zephyrine", source="doc")
            kernel.add_entity(ns, "Zephyrine", ["Quorumo"])
            kernel.put_concept(ns, "glossary/zephyr", f"{' '.join(WORDS)} concept of {ns}")
            kernel.set_policy(ns, {"retriever": "keyword"})
            make_token(kernel, ns, "read,write,admin")
    kernel.index.catalog.forget()
    return first


HEX_IDS = re.compile(r"\bm_[0-9a-f]{20}\b")
REQUEST_IDS = re.compile(r"\b[0-9a-f]{32}\b")
PRINCIPALS = re.compile(r"\b[0-9a-f]{16}\b")
TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?")


def normalized(value, names: dict[str, str]) -> object:  # noqa: ANN001
    """``value`` with what differs by construction replaced: memory ids by their order of
    appearance in the transcript (entity ids too: random, so they tell nothing), request and principal
    ids, times, elapsed milliseconds."""
    if isinstance(value, dict):
        return {k: (0 if k == "elapsed_ms" else
                    names.setdefault(f"entity {v}", f"E{len(names)}") if k == "id" and isinstance(v, int) else
                    normalized(v, names)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalized(v, names) for v in value]
    if isinstance(value, str):
        value = HEX_IDS.sub(lambda m: names.setdefault(m.group(), f"ID{len(names)}"), value)
        value = TIMES.sub("TIME", REQUEST_IDS.sub("RID", value))
        return PRINCIPALS.sub("PID", value)
    return value


def transcript(url: str, kernel, caller: str, first: dict[str, str], namespaces: list[str]) -> list:  # noqa: ANN001
    token = make_token(kernel, caller, "read,write")
    own, other = first[caller], next(first[ns] for ns in namespaces if ns not in lineage(caller))
    out: list = []

    def rest(method: str, path: str, **kwargs) -> None:  # noqa: ANN003
        r = http.request(method, path, **kwargs)
        body = r.json() if r.headers.get("content-type", "").startswith(("application/json", "application/problem"))\
            else r.text
        out.append(("rest", method, path, r.status_code, body))

    with httpx2.Client(base_url=url, headers=bearer(token), timeout=60) as http:
        rest("GET", "/v1/whoami")
        for driver in (None, "baseline", "fusion", "graph", "keyword"):
            body = {"query": "zephyr quorum lantern Zephyrine", "k": 20, "token_budget": 100000}
            if driver:
                body["driver"] = driver
            rest("POST", "/v1/search", json=body)
        rest("POST", "/v1/search", json={"query": "zephyr", "sources": ["doc"], "k": 20})
        rest("GET", f"/v1/memories/{own}/history")
        rest("GET", f"/v1/memories/{other}/history")
        rest("POST", "/v1/memories", json={"content": "zephyr Zephyrine remembered", "source": "doc"})
        rest("POST", "/v1/entities", json={"name": "Zephyrine", "aliases": ["Quorumo", "lantern"]})
        rest("GET", "/v1/entities")
        rest("PUT", "/v1/concepts/glossary/zephyr", json={"content": "zephyr means a light wind"})
        rest("POST", "/v1/concepts:search", json={"query": "zephyr glossary", "k": 20})
        rest("POST", "/v1/concepts:materialize", json={"path": "glossary/zephyr"})
        rest("GET", "/v1/policy")
        rest("POST", "/v1/memories:ingest", content=b'{"content": "quorum ingested", "key": "k1"}\n')
        rest("POST", f"/v1/memories/{other}/supersede", json={"content": "hijack"})
        rest("POST", f"/v1/memories/{other}/erase", json={"reason": "hijack"})
        rest("POST", f"/v1/memories/{own}/supersede", json={"content": "zephyr superseded"})
        rest("GET", "/v1/audit")
        rest("GET", "/v1/tokens")
    session = McpSession(url, token)
    try:
        for tool, args in (("search", {"query": "zephyr quorum Zephyrine", "k": 20}),
                           ("history", {"id": other}), ("remember", {"content": "lantern via mcp"}),
                           ("supersede", {"id": other, "content": "hijack"}),
                           ("erase", {"id": other, "reason": "hijack"})):
            ok, payload = session.call(tool, args)
            out.append(("mcp", tool, ok, payload))
    finally:
        session.close()
    CASES["requests"] += len(out)
    return out


@pytest.mark.parametrize("tree_seed", range(TREES))
def test_no_response_field_depends_on_rows_outside_the_acl(api_server, kernel, tree_seed):
    rng = random.Random(7000 + tree_seed)
    namespaces = random_tree(rng)
    for caller in rng.sample(namespaces, CALLERS):
        runs = []
        for perturb in (False, True):
            first = build(kernel, namespaces, caller, perturb)
            names: dict[str, str] = {}
            # the caller's own and visible ids are named first, in one order, in both worlds
            for ns in namespaces:
                names.setdefault(first[ns], f"ROW:{ns}")
            runs.append(normalized(transcript(api_server.url, kernel, caller, first, namespaces), names))
            CASES["worlds"] += 1
        for plain, perturbed in zip(*runs):
            assert plain == perturbed, (caller, json.dumps(plain)[:600], json.dumps(perturbed)[:600])
    print(f"\nresponse-field matrix tree {tree_seed}: {len(namespaces)} namespaces, {CALLERS} callers, "
          f"{CASES['requests']} requests in {CASES['worlds']} worlds so far")
    with kernel.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one() > len(namespaces)
