"""`policy report`: a generated A/B run with feedback; every number of the report is recomputed here
from the audit rows and the feedback table, and the verdict follows the evidence."""
from __future__ import annotations

import json
import statistics

import pytest

from halomem.auth.rights import Caller
from halomem.ops import for_operator
from halomem.policy.report import wilson
from halomem.types import Namespace

NS = "acme/ab"


def _run(kernel, searches: int, helpful_b: float, helpful_a: float) -> None:  # noqa: ANN001
    for i in range(40):
        kernel.remember(NS, f"Runbook {i}: restart the {['api', 'worker', 'cron', 'proxy'][i % 4]} with care {i}")
    kernel.set_policy(NS, {"ab_test": {"a": "baseline", "b": "keyword", "pct_b": 50}})
    operator = Caller.operator(Namespace(NS))
    given = {"a": 0, "b": 0}
    for i in range(searches):
        result = kernel.search(NS, f"how to restart the {['api', 'worker', 'cron', 'proxy'][i % 4]} number {i}")
        if not result.hits:
            continue
        arm = "b" if result.requested_driver == "keyword" else "a"
        share = helpful_b if arm == "b" else helpful_a
        given[arm] += 1
        verdict = "helpful" if given[arm] % 10 < share * 10 else "not-helpful"  # that share of each ten
        kernel.feedback(operator, result.request_id, result.hits[0].id, verdict)


def _recompute(kernel) -> dict:  # noqa: ANN001
    with kernel.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT seq, fields FROM audit_log WHERE action = 'search'"
                                    " AND fields->>'outcome' = 'ok'").all()
        fb = conn.exec_driver_sql("SELECT seq, verdict FROM feedback").all()
    arms: dict[str, dict] = {}
    for seq, f in rows:
        requested = f["requested"]
        arm = arms.setdefault(requested, {"searches": 0, "fallbacks": 0, "empty": 0, "ms": [], "fb": 0, "helpful": 0})
        arm["searches"] += 1
        arm["fallbacks"] += f["driver"] != requested
        arm["empty"] += f["returned"] == 0
        arm["ms"].append(f["ms"])
        for s, v in fb:
            if s == seq:
                arm["fb"] += 1
                arm["helpful"] += v == "helpful"
    return arms


def test_every_report_number_follows_from_the_rows(kernel, cli):
    _run(kernel, 60, helpful_b=0.9, helpful_a=0.3)
    report = for_operator(kernel, NS).policy_report(7)
    truth = _recompute(kernel)
    assert {a["driver"] for a in report["arms"]} == set(truth) == {"baseline", "keyword"}
    for arm in report["arms"]:
        t = truth[arm["driver"]]
        assert (arm["searches"], arm["feedback"], arm["helpful"]) == (t["searches"], t["fb"], t["helpful"])
        assert arm["fallback_rate"] == round(t["fallbacks"] / t["searches"], 4)
        assert arm["empty_rate"] == round(t["empty"] / t["searches"], 4)
        assert arm["plan_p50_ms"] == pytest.approx(statistics.median(t["ms"]), abs=1e-3)
        assert arm["helpful_interval"] == [round(x, 4) for x in wilson(t["helpful"], t["fb"])]
    assert report["verdict"]["verdict"] == "keyword better" and report["verdict"]["more_searches"] == 0
    shown = cli("policy", "report", "--ns", NS, "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["arms"] == report["arms"]
    text = cli("policy", "report", "--ns", NS)
    assert "verdict: keyword better" in text.stdout


def test_too_little_evidence_says_how_much_more_would_decide(kernel, cli, tmp_path):
    _run(kernel, 8, helpful_b=0.6, helpful_a=0.5)
    report = for_operator(kernel, NS).policy_report(7)
    assert report["verdict"]["verdict"] == "not enough data yet" and report["verdict"]["more_searches"] > 0
    plot = tmp_path / "arms.png"
    drawn = cli("policy", "report", "--ns", NS, "--out", str(plot))
    assert drawn.returncode == 0 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli("policy", "report", "--ns", NS, "--days", "0").returncode == 3


def test_a_shadow_arm_runs_beside_the_answer_and_is_only_recorded(kernel, cli):
    fact = kernel.remember(NS, "The proxy is restarted with systemctl restart envoy").id
    kernel.set_policy(NS, {"ab_test": {"a": "baseline", "b": "keyword", "pct_b": 100, "shadow": True}})
    results = [kernel.search(NS, f"restart the proxy {i}") for i in range(6)]
    assert {r.driver for r in results} == {"baseline"} and all(r.hits[0].id == fact for r in results)
    with kernel.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT fields FROM audit_log WHERE action = 'search'").scalars().all()
        seen = conn.exec_driver_sql("SELECT count(*) FROM search_seen").scalar()
    assert all(r["shadow"] == "keyword" and fact in [ref for _, _, ref, _ in r["shadow_refs"]] for r in rows)
    assert seen == len(results)  # the shadow's refs were handed to nobody: not "seen"
    report = for_operator(kernel, NS).policy_report(7)
    assert [(a["driver"], a["searches"]) for a in report["arms"]] == [("baseline", 6)] and "verdict" not in report
    [shadow] = report["shadows"]
    assert (shadow["driver"], shadow["runs"], shadow["failures"]) == ("keyword", 6, 0)
    assert shadow["overlap_at_k"] == pytest.approx(0.1)  # the one shared ref of k = 10
    kernel.set_policy(NS, {"ab_test": {"a": "baseline", "b": "gone", "pct_b": 100, "shadow": True}},
                      allow_unmounted=True)
    assert kernel.search(NS, "restart the proxy").hits[0].id == fact  # an unmounted shadow harms nothing
    assert kernel.audit_tail(1)[0].fields["shadow_error"] == "unmounted"
    shown = cli("policy", "set", "--ns", NS, "--ab-a", "baseline", "--ab-b", "keyword", "--pct-b", "30", "--shadow")
    assert shown.returncode == 0 and "keyword runs beside it on 30%" in shown.stdout
