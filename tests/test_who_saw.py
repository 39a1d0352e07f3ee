"""What did the agent see: each search's audit row names what it returned (refs, never content),
its query text lives outside the chain and is erasable, and `audit who-saw` answers from the rows,
within what the asking admin administers."""
from __future__ import annotations

import json
import re

import httpx2

from halomem.audit.seen import query_digest
from tests.conftest import make_token
from tests.serving import bearer


def search_rows(kernel):  # noqa: ANN001, ANN201
    with kernel.engine.connect() as conn:
        return conn.exec_driver_sql("SELECT seq, fields, actor_ns, principal FROM audit_log WHERE action = 'search'"
                                    " ORDER BY seq").all()


def test_a_search_row_records_its_refs_and_a_salted_digest_of_its_query(kernel):
    first = kernel.remember("acme/eng", "The staging cluster is rebuilt every Sunday night").id
    kernel.remember("acme/eng", "Lunch is served at noon in the atrium")
    result = kernel.search("acme/eng", "when is the staging cluster rebuilt", k=5)
    [row] = search_rows(kernel)
    refs = row.fields["refs"]
    assert [r[2] for r in refs] == [h.ref for h in result.hits] and refs[0][2] == first
    assert [r[0] for r in refs] == list(range(1, len(refs) + 1))
    text = json.dumps(row.fields)
    assert "Sunday" not in text and "staging" not in text  # refs and a digest, never text
    assert (row.fields["k"], row.fields["budget"], row.fields["via"]) == (5, 2000, "local")
    assert row.fields["embedder"].startswith("hash") and re.fullmatch(r"[0-9a-f]{64}", row.fields["query"])
    with kernel.engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT salt, query FROM search_queries WHERE seq = %s", (row.seq,)).one()
        seen = conn.exec_driver_sql("SELECT rank, memory_id FROM search_seen WHERE seq = %s ORDER BY rank",
                                    (row.seq,)).all()
    assert stored.query == "when is the staging cluster rebuilt"
    assert row.fields["query"] == query_digest(stored.salt, stored.query)
    assert [s.memory_id for s in seen] == [h.id for h in result.hits]
    assert kernel.audit_verify().ok


def test_who_saw_lists_every_version_seen_and_survives_erasure_without_content(kernel, cli):
    old = kernel.remember("acme/eng", "The on-call phone number is 555-0100").id
    new = kernel.supersede("acme/eng", old, "The on-call phone number is 555-0199").id
    kernel.search("acme/eng", "on-call phone number", k=3)  # returns the head
    kernel.search("acme", "on-call phone", k=3)  # acme cannot read acme/eng: returns nothing of it
    found = kernel.who_saw(old)
    assert set(found.versions) == {old, new}
    assert [(s.namespace, s.memory_id, s.rank) for s in found.sightings] == [("acme/eng", new, 1)]
    kernel.erase("acme/eng", new, reason="wrong number")
    after = json.loads(cli("audit", "who-saw", old, "--json").stdout)
    assert [(s["namespace"], s["memory_id"], s["transport"]) for s in after["sightings"]] == [("acme/eng", new, "local")]
    assert "555-01" not in json.dumps(after) and "phone" not in json.dumps(after)  # ids may hold any digits
    with kernel.engine.connect() as conn:  # the query that found the erased memory is forgotten too
        assert conn.exec_driver_sql("SELECT count(*) FROM search_queries").scalar() == 1
    assert kernel.audit_verify().ok
    shown = cli("audit", "who-saw", old)
    assert shown.returncode == 0 and "acme/eng" in shown.stdout and "rank 1" in shown.stdout


def test_who_saw_over_rest_shows_an_admin_only_what_it_administers(api_server, kernel):
    shared = kernel.remember("acme", "Badges are renewed every January").id
    eng_reader, sales_reader = make_token(kernel, "acme/eng", "read"), make_token(kernel, "acme/sales", "read")
    for token in (eng_reader, sales_reader):
        r = httpx2.post(api_server.url + "/v1/search", json={"query": "badges renewed"}, headers=bearer(token))
        assert r.status_code == 200 and r.json()["hits"][0]["id"] == shared
    mcp = httpx2.post(api_server.url + "/mcp", headers={**bearer(eng_reader), "Accept": "application/json, "
                      "text/event-stream"}, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "search", "arguments": {"query": "badges"}}})
    assert mcp.status_code == 200
    url = api_server.url + "/v1/audit/who-saw"
    eng_admin, root_admin = make_token(kernel, "acme/eng", "admin"), make_token(kernel, "acme", "admin")
    seen_by_eng = httpx2.get(url, params={"memory_id": shared}, headers=bearer(eng_admin)).json()
    assert [(s["namespace"], s["transport"]) for s in seen_by_eng["sightings"]] == [("acme/eng", "rest"),
                                                                                  ("acme/eng", "mcp-http")]
    everything = httpx2.get(url, params={"memory_id": shared}, headers=bearer(root_admin)).json()
    assert sorted(s["namespace"] for s in everything["sightings"]) == ["acme/eng", "acme/eng", "acme/sales"]
    unknown = httpx2.get(url, params={"memory_id": "0" * 32}, headers=bearer(eng_admin))
    assert unknown.status_code == 200 and unknown.json()["sightings"] == []
    assert httpx2.get(url, params={"memory_id": shared}, headers=bearer(eng_reader)).status_code == 403
    assert httpx2.get(url, params={"memory_id": "x" * 5000}, headers=bearer(eng_admin)).status_code == 422
