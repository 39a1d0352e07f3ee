"""Feedback on returned refs: accepted only for a ref that request R returned to the caller (or to a
principal an admin administers), refused in one indistinguishable way otherwise, audited without
its note, and its note cleared when the memory is erased."""
from __future__ import annotations

import json

import httpx2

from tests.conftest import make_token
from tests.mcp_client import McpSession
from tests.serving import bearer


def _search(url: str, token: str, query: str) -> dict:
    r = httpx2.post(url + "/v1/search", headers=bearer(token), json={"query": query})
    assert r.status_code == 200
    return r.json()


def test_feedback_only_on_what_was_returned_to_the_caller(api_server, kernel):
    mine = kernel.remember("acme/eng", "The build cache lives on cache1.internal").id
    sibling = kernel.remember("acme/sales", "The build cache for sales lives on cache9.internal").id
    eng, other_eng = make_token(kernel, "acme/eng", "read"), make_token(kernel, "acme/eng", "read")
    sales = make_token(kernel, "acme/sales", "read")
    found = _search(api_server.url, eng, "build cache")
    assert [h["id"] for h in found["hits"]] == [mine]
    sales_found = _search(api_server.url, sales, "build cache")
    url = api_server.url + "/v1/feedback"

    def give(token: str, request_id: str, ref: str, verdict: str = "helpful", **more) -> httpx2.Response:
        return httpx2.post(url, headers=bearer(token), json={"request_id": request_id, "ref": ref,
                                                             "verdict": verdict, **more})

    ok = give(eng, found["request_id"], mine, note="exactly what I needed")
    assert ok.status_code == 201 and ok.json()["memory_id"] == mine and ok.json()["note"] == "exactly what I needed"
    # every refusal reads the same: another principal's request, a sibling's ref, a request that
    # never was, a ref that exists but was not returned, a ref that does not exist
    refusals = [give(other_eng, found["request_id"], mine), give(eng, found["request_id"], sibling),
                give(eng, "0" * 32, mine), give(eng, sales_found["request_id"], sibling),
                give(eng, found["request_id"], "m_" + "0" * 20)]
    assert {r.status_code for r in refusals} == {404}
    shapes = {r.json()["detail"].replace(found["request_id"], "R").replace(sales_found["request_id"], "R")
              .replace("0" * 32, "R").replace(sibling, "X").replace(mine, "X").replace("m_" + "0" * 20, "X")
              for r in refusals}
    assert shapes == {"no ref 'X' was returned to you in request 'R'"}
    assert give(eng, found["request_id"], mine, verdict="meh").status_code == 422
    assert give(eng, found["request_id"], mine, note="x" * 501).status_code == 422
    # an admin over acme/eng may judge what its principals were handed; an admin of a sibling may not
    assert give(make_token(kernel, "acme", "admin"), found["request_id"], mine, "wrong").status_code == 201
    assert give(make_token(kernel, "acme/sales", "admin"), found["request_id"], mine).status_code == 404
    with kernel.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT fields FROM audit_log WHERE action = 'feedback' ORDER BY seq").scalars().all()
    accepted = [f for f in rows if f["outcome"] == "ok"]
    assert [(f["ref"], f["verdict"], f["note"]) for f in accepted] == [(mine, "helpful", True), (mine, "wrong", False)]
    assert not any("needed" in json.dumps(r) for r in rows)  # the note is user data: never in the chain
    assert sum(r == {"outcome": "refused", "kind": "not-found"} for r in rows) == 6
    assert kernel.audit_verify().ok


def test_feedback_over_mcp_and_cli_and_its_note_is_erased_with_the_memory(api_server, kernel, cli):
    fact = kernel.remember("acme/eng", "Expense reports are due on the 5th").id
    token = make_token(kernel, "acme/eng", "read")
    session = McpSession(api_server.url, token)
    try:
        ok, found = session.call("search", {"query": "expense reports due"})
        assert ok and found["hits"][0]["id"] == fact
        ok, given, text = session.call_with_text("feedback", {"request_id": found["request_id"], "ref": fact,
                                                              "verdict": "not-helpful", "note": "it moved to the 3rd"})
        assert ok and given["verdict"] == "not-helpful" and "Recorded not-helpful" in text
        ok, refused = session.call("feedback", {"request_id": found["request_id"], "ref": "m_x", "verdict": "wrong"})
        assert not ok and refused.startswith("not found: no ref 'm_x' was returned to you")
    finally:
        session.close()
    local = json.loads(cli("search", "--ns", "acme/eng", "expense reports", "--json").stdout)
    shown = cli("feedback", local["request_id"], fact, "wrong", "--ns", "acme/eng", "--note", "outdated", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["note"] == "outdated"
    assert cli("feedback", local["request_id"], fact, "wrong", "--ns", "acme/sales").returncode == 4
    kernel.erase("acme/eng", fact, reason="outdated")
    with kernel.engine.connect() as conn:
        kept = conn.exec_driver_sql("SELECT verdict, note FROM feedback ORDER BY id").all()
    assert [tuple(r) for r in kept] == [("not-helpful", None), ("wrong", None)]  # verdicts stay, notes go


def test_no_feedback_on_an_erased_memory_and_one_verdict_per_principal_counts(api_server, kernel):
    from halomem.ops import for_operator

    kernel.set_policy("acme/eng", {"ab_test": {"a": "baseline", "b": "keyword", "pct_b": 50}})
    fact = kernel.remember("acme/eng", "The release checklist lives in the wiki under ops/release").id
    doomed = kernel.remember("acme/eng", "The release freeze starts on the 15th").id
    token = make_token(kernel, "acme/eng", "read")
    url = api_server.url + "/v1/feedback"
    found = _search(api_server.url, token, "release checklist freeze")
    assert {fact, doomed} <= {h["id"] for h in found["hits"]}
    kernel.erase("acme/eng", doomed, reason="wrong")
    late = httpx2.post(url, headers=bearer(token), json={"request_id": found["request_id"], "ref": doomed,
                                                        "verdict": "wrong", "note": "it quoted the 15th"})
    never = httpx2.post(url, headers=bearer(token), json={"request_id": found["request_id"], "ref": "m_" + "0" * 20,
                                                         "verdict": "wrong"})
    assert late.status_code == never.status_code == 404
    assert late.json()["detail"].replace(doomed, "X") == never.json()["detail"].replace("m_" + "0" * 20, "X")
    with kernel.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM feedback").scalar() == 0
    # one principal saying the same 40 times counts once: the latest verdict per request, ref, principal
    for i in range(40):
        assert httpx2.post(url, headers=bearer(token), json={"request_id": found["request_id"], "ref": fact,
                                                             "verdict": "not-helpful" if i < 39 else "helpful"}
                           ).status_code == 201
    report = for_operator(kernel, "acme/eng").policy_report(7)
    arm = next(a for a in report["arms"] if a["driver"] == found["driver"])
    assert (arm["feedback"], arm["helpful"]) == (1, 1)
    assert report["repeated_feedback_ignored"] == 39
