"""`halomem eval`: a generated organisation whose drivers' true quality is known by construction;
eval ranks them right, its intervals cover the truth, the report's numbers follow from its rows,
and `--fail-if-worse` gates a worse arm with exit 18."""
from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest

from halomem.errors import EVAL_WORSE_EXIT, InvalidInputError
from halomem.eval import Judgement, run_eval
from halomem.eval.bootstrap import draws
from halomem.eval.runner import METRICS
from halomem.ops import for_operator
from halomem.types import Capabilities, Namespace, ScoredRef
from tests.cartridges import install_third_party

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
TEAMS = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ida", "Jo"]
NS = "acme/evalorg"


class _Knowing:
    """A driver that ranks the one relevant memory first for the queries in ``knows`` (through its
    view: only refs the view admitted count), and nothing relevant otherwise."""

    def __init__(self, name: str, answers: dict[str, str], knows: set[str]) -> None:
        self.name, self.answers, self.knows = name, answers, knows

    def capabilities(self) -> Capabilities:
        return Capabilities()

    def plan(self, q) -> list[ScoredRef]:  # noqa: ANN001
        rows = {c.ref: c for c in q.view.candidates(500)}
        wanted = self.answers.get(q.query) if q.query in self.knows else None
        return [ScoredRef(wanted, "L2", wanted, 1.0, "", 1)] if wanted in rows else []


@pytest.fixture()
def org(kernel):  # noqa: ANN001, ANN201
    # each (word, team) pair names two services (i and i + 100): a lexical ranker finds both and
    # cannot tell which one a question means, so baseline is good but not perfect
    texts = [f"The {WORDS[i % 10]} service number {i} is owned by team {TEAMS[i // 10 % 10]}" for i in range(200)]
    ids = kernel.ingest_texts(NS, texts)
    queries = {f"who owns the {WORDS[i % 10]} service of team {TEAMS[i // 10 % 10]}": ids[i] for i in range(200)}
    return ids, queries


def test_eval_finds_the_better_arm_and_its_intervals_cover_the_truth(kernel, org):
    ids, queries = org
    population = sorted(queries)
    half = {q for q in population if int(queries[q][-4:], 16) % 2 == 0}  # about half the population
    truth = len(half) / len(population)  # the half-knowing arm's population nDCG@10 (= R@10 = MRR)
    kernel.registry.mount(_Knowing("oracle", queries, set(population)))
    kernel.registry.mount(_Knowing("halfway", queries, half))
    sample = random.Random(3).sample(population, 60)
    judged = [Judgement(q, {queries[q]: 1.0}) for q in sample] + [Judgement("lunch menu", {})]
    report = for_operator(kernel, NS).eval(judged, ["oracle", "halfway"])
    assert (report.judged, report.unjudged) == (60, 1)
    assert 0.5 < report.by_name("baseline").means["nDCG@10"].value < 1.0
    oracle, halfway = report.by_name("oracle"), report.by_name("halfway")
    assert oracle.means["nDCG@10"].value == 1.0 and oracle.better
    for metric in METRICS:
        interval = halfway.means[metric]
        assert interval.low <= truth <= interval.high, (metric, interval, truth)
    assert halfway.worse  # it misses half of what a lexical ranker finds at rank 1 or 2
    # every number recomputed from the per-query rows with the report's own draws
    picks = draws(report.judged)
    for name, rows in report.per_query.items():
        for metric in METRICS:
            values = np.array([r[metric] for r in rows])
            assert report.by_name(name).means[metric].value == pytest.approx(values.mean())
            means = values[picks].mean(axis=1)
            assert report.by_name(name).means[metric].low == pytest.approx(np.percentile(means, 2.5))
    with kernel.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT action, fields FROM audit_log WHERE action IN ('eval', 'search')").all()
    assert [tuple(r) for r in rows] == [("eval", {"outcome": "ok"})]  # read-only: no search rows, nothing seen


def test_eval_reads_one_instant_and_refuses_what_cannot_be_scored(kernel, org):
    ids, queries = org
    first = sorted(queries)[0]
    with pytest.raises(InvalidInputError):
        run_eval(kernel, Namespace(NS), [Judgement("x", {})], ["baseline"])
    with pytest.raises(InvalidInputError):
        run_eval(kernel, Namespace(NS), [Judgement(first, {queries[first]: 1})], ["nope"])
    from datetime import datetime, timezone

    before = datetime.now(timezone.utc)
    kernel.erase(NS, queries[first], reason="test")  # after the instant: erasure still wins
    report = run_eval(kernel, Namespace(NS), [Judgement(first, {queries[first]: 1})], ["baseline"], as_of=before)
    assert report.by_name("baseline").means["R@10"].value == 0.0


def test_cli_eval_from_a_file_and_from_feedback_and_the_gate(kernel, org, cli, tmp_path):
    ids, queries = org
    sample = sorted(queries)[:40]
    judgements = tmp_path / "judged.jsonl"
    judgements.write_text("\n".join(json.dumps({"query": q, "relevant": [queries[q]]}) for q in sample) + "\n")
    (tmp_path / "site").mkdir()
    site = install_third_party(tmp_path / "site", ranking="hybrid_rank(q)[::-1]")  # the right rows, worst first
    env = {"PYTHONPATH": f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    shown = cli("eval", "--ns", NS, "--judgements", str(judgements), "--driver", "keyword", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert [d["driver"] for d in report["drivers"]] == ["baseline", "keyword"] and report["judged"] == 40
    gate = cli("eval", "--ns", NS, "--judgements", str(judgements), "--fail-if-worse", "thirdparty", env=env)
    assert gate.returncode == EVAL_WORSE_EXIT and "| thirdparty |" in gate.stdout and "worse" in gate.stdout
    fine = cli("eval", "--ns", NS, "--judgements", str(judgements), "--fail-if-worse", "keyword", env=env)
    assert fine.returncode == 0
    # judgements from what agents said: helpful refs are relevant
    for q in sample[:5]:
        found = json.loads(cli("search", "--ns", NS, q, "--json").stdout)
        assert cli("feedback", found["request_id"], found["hits"][0]["id"], "helpful", "--ns", NS).returncode == 0
    fed = json.loads(cli("eval", "--ns", NS, "--from-feedback", "--driver", "baseline", "--json").stdout)
    assert fed["judged"] == 5 and fed["drivers"][0]["means"]["R@10"]["value"] == 1.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n')
    refused = cli("eval", "--ns", NS, "--judgements", str(bad))
    assert refused.returncode == 11 and refused.stderr.count("\n") == 1 and "line 1" in refused.stderr
    assert cli("eval", "--ns", NS).returncode == 3
