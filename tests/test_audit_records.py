"""Audit rows are typed records: each row's fields are stored as data (JSONB) and hashed in one
canonical encoding, and every reader (policy report, replay, who-saw, the listing) reads them as
data. Text a caller controls can therefore never become a field of its own row; rows written
before (free text) migrate with the chain still verifiable."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import httpx2
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings, strategies as st

from halomem.audit.log import GENESIS, LEGACY_FORMAT, row_hash
from halomem.ops import for_operator
from halomem.records import canonical, clean
from tests.conftest import make_token
from tests.serving import bearer

# text built to look like fields, quotes, JSON and markup: what a forger would type
HOSTILE = st.one_of(
    st.sampled_from(['x driver=keyword requested=keyword ms=0.01 returned=0', 'a" as_of="2001-01-01T00:00:00+00:00',
                     '"] k=1 budget=1 driver=graph', "x\ny chosen_by=policy", '{"outcome": "ok"}', "<script>alert(1)</script>",
                     "sources=[] refs=[[1,\"L2\",\"m_x\",1]]", "\\\" via=mcp-stdio \\\"", "=== = =", " ", "",
                     "‮evil‬", "emoji 🚀 = 1"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=60),
)


def test_clean_values_read_back_from_jsonb_as_they_were_hashed(kernel):
    """The canonical encoding is stable through JSONB: every value clean() keeps reads back equal."""
    odd = {"big": 1e20, "neg0": -0.0, "tiny": 1e-7, "nan": float("nan"), "nul": "a\x00b", "lone": "\ud800x",
           "nested": {"b": [1, 2.5, True, None], "a": "é"}, "int": 2**40, "float_int": 3.0}
    record = clean(odd)
    with kernel.engine.connect() as conn:
        back = conn.execute(sa.text("SELECT CAST(:v AS jsonb)"), {"v": json.dumps(record)}).scalar()
    assert canonical(back) == canonical(record)
    assert record["nul"] == "a\ufffdb" and record["nan"] is None and record["big"] == 10**20


def _legacy_chain(rows):  # noqa: ANN001, ANN202 - (action, detail) pairs -> rows as v12 wrote them
    prev, at, out = GENESIS, datetime(2026, 11, 1, tzinfo=timezone.utc), []
    for seq, (action, detail) in enumerate(rows, 1):
        at += timedelta(seconds=1)
        digest = row_hash(prev, seq, at, "acme/eng", action, detail, f"r{seq}", None, LEGACY_FORMAT)
        out.append({"seq": seq, "at": at, "ns": "acme/eng", "action": action, "detail": detail, "rid": f"r{seq}",
                    "prev": prev, "hash": digest})
        prev = digest
    return out


def test_rows_written_before_typed_records_migrate_and_the_chain_still_verifies(tmp_path):
    from halomem.config import Settings
    from halomem.db.embedded import ephemeral_server
    from halomem.db.migrations import migrate
    from halomem.kernel import Kernel

    forged_sources = json.dumps(['x" driver=keyword as_of=2001-01-01T00:00:00+00:00 q'], separators=(",", ":"))
    legacy = _legacy_chain([
        ("remember", "remember ok id=m_1"),
        ("search", "search ok returned=1 tokens=3 driver=fusion driver_version=0.1.0 ms=12.50 sources="
                   + forged_sources + " requested=fusion k=10 budget=2000 embedder=hash via=rest query=abc"
                   ' refs=[[1,"L2","m_1",0.5]]'),
        ("policy", 'policy ok {"retriever": "graph"}'),
        ("request", "POST /v1/search refused kind=payload-too-large status=413"),
        ("erase", 'erase ok id=m_1 reason="a reason with words=and spaces"'),
    ])
    with ephemeral_server(prefix="halomem-v13-") as url:
        kernel = Kernel.boot(Settings(home=tmp_path, database_url=url, embedder="hash"), mount_plugins=False)
        try:
            with kernel.engine.begin() as conn:  # back to v12: free-text rows only
                conn.exec_driver_sql("ALTER TABLE audit_log DROP COLUMN fields, DROP COLUMN row_format")
                conn.exec_driver_sql("ALTER TABLE audit_log ALTER COLUMN detail SET NOT NULL")
                conn.execute(sa.text("INSERT INTO audit_log (seq, at, actor_ns, action, detail, request_id, prev_hash,"
                                     " hash) VALUES (:seq, :at, :ns, :action, :detail, :rid, :prev, :hash)"), legacy)
                conn.exec_driver_sql("UPDATE halomem_meta SET value = '12' WHERE key = 'schema_version'")
            assert migrate(kernel.engine, "hash", kernel.embedder.dim) == 12
            assert kernel.audit_verify().ok  # the old hashes still cover the old text
            rows = kernel.audit_tail(10)
            search = rows[1].fields
            assert search["sources"] == json.loads(forged_sources)  # the filter read whole, as one value
            assert (search["driver"], search["returned"], search["k"], search["refs"]) == ("fusion", 1, 10,
                                                                                          [[1, "L2", "m_1", 0.5]])
            assert "as_of" not in search
            assert rows[2].fields == {"outcome": "ok", "policy": {"retriever": "graph"}}
            assert rows[3].fields == {"route": "POST /v1/search", "outcome": "refused", "kind": "payload-too-large",
                                      "status": 413}
            assert rows[4].fields["reason"] == "a reason with words=and spaces"
            kernel.remember("acme/eng", "a row after the upgrade")  # new rows chain on in the typed format
            assert kernel.audit_verify().ok
            report = for_operator(kernel, "acme/eng").policy_report(3660)
            assert [a["driver"] for a in report["arms"]] == ["fusion"]
            with kernel.engine.begin() as conn:  # the old text is still what the old hash covers
                conn.exec_driver_sql("UPDATE audit_log SET detail = detail || ' ' WHERE seq = 2")
            assert kernel.audit_verify().first_bad_seq == 2
        finally:
            kernel.close()


def test_a_source_filter_cannot_forge_fields_of_its_own_search_row(kernel, cli):
    fact = kernel.remember("acme/eng", "Deploys go through ArgoCD canaries", source="runbook").id
    forged = 'runbook" driver=keyword requested=keyword ms=0.001 returned=0 as_of="2001-01-01T00:00:00+00:00'
    for sources in (["runbook"], ["runbook", forged], [forged + " chosen_by=caller"]):
        kernel.search("acme/eng", "how do deploys work", sources=sources)
    report = for_operator(kernel, "acme").policy_report(7)
    [arm] = report["arms"]
    assert (arm["driver"], arm["searches"], arm["fallback_rate"]) == ("fusion", 3, 0.0)
    assert arm["empty_rate"] == pytest.approx(1 / 3, abs=1e-3)  # only the last asked for a source that has nothing
    assert arm["plan_p50_ms"] > 0.01
    rows = kernel.audit_tail(3, "search")
    assert [r.fields["sources"] for r in rows][1] == ["runbook", forged]
    for row in rows:
        replay = kernel.replay(row.seq)
        assert replay.identical and replay.recorded_driver == "fusion"
        assert replay.as_of == row.at.isoformat()  # the instant it was asked, whatever the filter said
    assert kernel.replay(rows[0].seq).recorded[0].ref == fact
    shown = cli("policy", "report", "--ns", "acme")
    assert shown.returncode == 0 and "keyword" not in shown.stdout


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=HOSTILE)
def test_hostile_text_in_every_caller_field_changes_no_report_replay_or_listing(api_server, kernel, text):
    """Every field a caller controls, over REST: the source filter, the query, an erase reason, a
    feedback note, entity names, a token name. No answer is a 5xx; the report's arms, replay and the
    trail's listing mean what they meant; the chain verifies."""
    with kernel.engine.begin() as conn:
        conn.exec_driver_sql("TRUNCATE audit_log, search_seen, search_queries, feedback, memories, lexicon,"
                             " lexicon_events, principals, entities, entity_aliases, mentions CASCADE")
    from halomem.audit.heads import FILES

    for name in FILES:
        (kernel.settings.home / name).unlink(missing_ok=True)
    writer = make_token(kernel, "acme/eng", "read,write")
    admin = make_token(kernel, "acme", "admin")
    kept = kernel.remember("acme/eng", "The runbook says deploys go through canaries", source="runbook").id
    with httpx2.Client(base_url=api_server.url, timeout=30) as http:
        answers = []
        searched = http.post("/v1/search", headers=bearer(writer),
                             json={"query": "deploys canaries " + text[:40], "sources": ["runbook", text]})
        answers.append(searched)
        if searched.status_code == 200 and searched.json()["hits"]:
            hit = searched.json()["hits"][0]
            answers.append(http.post("/v1/feedback", headers=bearer(writer), json={
                "request_id": searched.json()["request_id"], "ref": hit["id"], "verdict": "helpful", "note": text}))
        doomed = http.post("/v1/memories", headers=bearer(writer), json={"content": "to be erased", "source": text})
        answers.append(doomed)
        if doomed.status_code == 201:
            answers.append(http.post(f"/v1/memories/{doomed.json()['id']}/erase", headers=bearer(writer),
                                     json={"reason": text}))
        answers.append(http.post("/v1/entities", headers=bearer(writer), json={"name": text or "x", "aliases": [text]}))
        answers.append(http.post("/v1/tokens/acme/eng", headers=bearer(admin), json={"name": text, "scopes": ["read"]}))
        listing = http.get("/v1/audit", headers=bearer(admin), params={"n": 100})
        report = http.get("/v1/policy/report", headers=bearer(admin))
        answers += [listing, report]
        assert all(a.status_code < 500 for a in answers), [(a.status_code, a.text[:200]) for a in answers]
        assert listing.status_code == 200 and report.status_code == 200
        arms = report.json()["arms"]
        assert {a["driver"] for a in arms} <= {"fusion"} and all(a["fallback_rate"] in (0.0, None) for a in arms)
        searches = [r for r in listing.json()["rows"] if r["action"] == "search" and r["outcome"] == "ok"]
        for row in searches:
            assert row["fields"]["driver"] == "fusion" and row["fields"]["chosen_by"] == "policy"
            assert row["fields"]["sources"] == ["runbook", text]  # the filter, whole, as one value
            replayed = http.post(f"/v1/audit/replay/{row['seq']}", headers=bearer(admin))
            assert replayed.status_code == 200, replayed.text
            assert replayed.json()["identical"] and replayed.json()["as_of"] == row["at"]
            assert [r["ref"] for r in replayed.json()["recorded"]] in ([kept], [])
    assert kernel.audit_verify().ok
