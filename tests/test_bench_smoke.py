"""Smoke runs of every benchmark at tiny sizes, so the harness keeps working (numbers live in `make bench`)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from halomem.bench.datasets import load_beir, load_locomo, normalize_evidence
from halomem.ranking_metrics import mrr_at, ndcg_at, recall_at

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"


def test_metrics():
    ranked = ["a", "x", "b", "y"]
    assert recall_at(ranked, {"a", "b", "c"}, 2) == pytest.approx(1 / 3)
    assert mrr_at(ranked, {"b"}, 10) == pytest.approx(1 / 3) and mrr_at(ranked, {"z"}, 10) == 0
    assert ndcg_at(["a", "b"], {"a", "b"}, 10) == pytest.approx(1.0)
    assert ndcg_at(["x", "a"], {"a"}, 10) == pytest.approx(1 / 1.5849625, rel=1e-6)


def test_evidence_normalization():
    assert normalize_evidence(["D8:6; D9:17"]) == {"D8:6", "D9:17"}
    assert normalize_evidence(["D9:1 D4:4 D4:6", "D30:05"]) == {"D9:1", "D4:4", "D4:6", "D30:5"}
    assert normalize_evidence(["", "n/a"]) == set()


@pytest.mark.skipif(not LOCOMO.exists(), reason="shared/data/locomo10.json not beside the checkout")
def test_locomo_quality_smoke(tmp_path):
    from halomem.bench.quality import run_quality

    ds = load_locomo(LOCOMO, limit_conversations=1)
    assert ds.doc_count == 419 and ds.docs["locomo/conv-26"][0].text.startswith("[1:56 pm on 8 May, 2023] Caroline: ")
    ds.queries = ds.queries[:25]
    result = run_quality(ds, ["hash"], ["baseline", "keyword"], tmp_path)
    rows = json.loads((tmp_path / "quality-locomo.json").read_text())["results"]
    assert {r["driver"] for r in rows} == {"baseline", "keyword"}
    assert all(0 <= r["R@10"] <= 1 and r["queries"] > 0 for r in rows)
    assert any(r["R@10"] > 0.2 for r in rows)  # a working retriever finds some evidence
    assert "| hash | baseline |" in result["markdown"] and (tmp_path / "quality-locomo.md").exists()


def test_beir_loader_and_quality(tmp_path):
    from halomem.bench.quality import run_quality

    beir = tmp_path / "tiny"
    (beir / "qrels").mkdir(parents=True)
    docs = {"d1": "the heron nests by the reservoir", "d2": "quarterly tax filing deadline", "d3": "heron migration"}
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                               for k, v in docs.items()))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "where do herons nest"}) + "\n"
                                        + json.dumps({"_id": "q2", "text": "tax deadline"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td9\t1\n")
    ds = load_beir(beir)
    assert ds.doc_count == 3 and len(ds.queries) == 2 and ds.skipped_queries == 1
    result = run_quality(ds, ["hash"], ["baseline"], tmp_path / "out")
    [row] = result["results"]
    assert row["R@10"] == 1.0 and row["MRR@10"] == 1.0


def test_beir_skips_empty_documents_with_the_default_embedder(tmp_path, cli_env):
    """An empty document is left out and counted, not an abort; `--embedder default` is a new store's."""
    beir = tmp_path / "gaps"
    (beir / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "Herons", "text": "the heron nests by the reservoir"},
            {"_id": "d2", "title": "", "text": ""}, {"_id": "d3", "title": "  ", "text": "\n"},
            {"_id": "d4", "title": "Tax", "text": "the quarterly filing deadline"}]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "where do herons nest"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    done = subprocess.run([sys.executable, "-m", "halomem.cli.main", "bench", "quality", "--dataset", "beir",
                           "--path", str(beir), "--driver", "fusion", "--out", str(tmp_path / "out"), "--json"],
                          env=cli_env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["skipped_docs"] == 2 and report["docs"] == 2
    [row] = report["results"]
    assert row["embedder"] == "default" and row["R@10"] == 1.0


def test_paraphrase_set_with_fusions_lanes_alone(tmp_path, cli_env):
    """`bench quality --dataset paraphrases --lanes`: every fact asked in other words, and fusion's two
    lanes scored alone beside it (what the default must add to, docs/bench/fusion.md)."""
    facts = tmp_path / "facts.jsonl"
    facts.write_text(json.dumps({"fact": "Invoices are paid within thirty days of receipt.",
                                 "question": "when do invoices get paid"}) + "\n"
                     + json.dumps({"fact": "The heron nests by the reservoir.", "question": "where do herons nest"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "halomem.cli.main", "bench", "quality", "--dataset", "paraphrases",
                           "--path", str(facts), "--embedder", "hash", "--driver", "fusion", "--lanes",
                           "--out", str(tmp_path / "out"), "--json"], env=cli_env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["dataset"] == "paraphrases" and report["docs"] == 2 and report["queries"] == 2
    rows = {r["driver"]: r for r in report["results"]}
    assert set(rows) == {"fusion", "fusion/bm25-alone", "fusion/vectors-alone"}
    assert rows["fusion"]["R@10"] == 1.0 and rows["fusion/bm25-alone"]["R@10"] == 1.0  # each shares a word
    assert (tmp_path / "out" / "quality-paraphrases.md").read_text().count("| hash | fusion") == 3


def test_a_lane_alone_returns_only_what_its_own_lane_found():
    """fusion's BM25 lane alone returns only memories sharing a query word, its vector lane alone
    only what the vectors found: a lane measured alone is that lane (the default embedder)."""
    from halomem.bench.harness import ephemeral_kernel
    from halomem.drivers.fusion import FusionDriver
    from halomem.drivers.view import build_scoped_view
    from halomem.index import Scope
    from halomem.types import Namespace, RetrieverQuery

    with ephemeral_kernel("default") as kernel:
        heron = kernel.remember("acme", "The heron nests by the reservoir.").id
        tax = kernel.remember("acme", "Quarterly tax filing is due in April.").id
        with kernel.index.reader() as reader:
            view = build_scoped_view(reader, Scope(Namespace("acme")), kernel.embedder)

            def plan(driver: FusionDriver, query: str) -> list[str]:
                return [r.ref for r in driver.plan(RetrieverQuery(query, view, 10_000, 10))]

            bm25, vectors = FusionDriver(1.0, 0.0, context=False), FusionDriver(0.0, 1.0, context=False)
            meaning = "where do wading birds breed"  # no word of either memory
            assert plan(bm25, meaning) == [] and plan(vectors, meaning)[:1] == [heron]
            assert plan(FusionDriver(), meaning)[:1] == [heron]
            assert set(plan(bm25, "tax reservoir")) == {heron, tax}


def test_latency_ingest_and_cli_smoke(tmp_path):
    from halomem.bench.cli_speed import run_cli
    from halomem.bench.ingest_speed import run_ingest
    from halomem.bench.latency import WARM_PASSES, WARM_READ_SHARE, run_latency

    lat = run_latency([400], ["baseline", "graph"], tmp_path, query_count=10)
    assert set(lat["results"][0]["drivers"]) == {"baseline", "graph"} and lat["results"][0]["floor"]["p95"] > 0
    passes = lat["results"][0]["warm_up_passes"]  # a 400-row store fits in shared buffers: steady at once
    assert 1 <= len(passes) < WARM_PASSES and passes[-1]["hit"] > 0
    assert passes[-1]["read"] < WARM_READ_SHARE * (passes[-1]["read"] + passes[-1]["hit"])
    deferred = run_latency([300], ["baseline"], tmp_path / "deferred", query_count=5, build_index_after=1)
    assert deferred["results"][0]["drivers"]["baseline"]["p95"] > 0  # the index-after-load path works
    ing = run_ingest(300, ["hash"], tmp_path)
    assert ing["results"][0]["ingest_per_s"] > 0 and ing["results"][0]["raw_copy_per_s"] > 0
    cli = run_cli(1, tmp_path)
    assert cli["server_running_ms"] > 0 and cli["server_not_running_ms"] > 0
    assert {p.name for p in tmp_path.iterdir()} >= {"latency.json", "latency.md", "ingest.json", "cli.json"}


def test_as_of_latency_bench_supersedes_its_share_and_times_both_legs(tmp_path):
    from halomem.bench.as_of_latency import run_as_of_latency

    done = run_as_of_latency([400], ["baseline", "fusion"], tmp_path, query_count=5)
    [row] = done["results"]
    # 30% of each namespace's rows, rounded down per namespace
    assert 0.25 * 400 <= row["superseded"] <= 0.3 * 400 and set(row["drivers"]) == {"baseline", "fusion"}
    assert all(v["as_of_p95"] > 0 and v["present_p95"] > 0 for v in row["drivers"].values())
    assert (tmp_path / "latency-as-of.md").read_text().count("| 400 |") == 2


def test_search_costs_bench_times_the_real_audit_write_and_both_policies(tmp_path):
    from halomem.bench.search_costs import run_search_costs

    done = run_search_costs(400, 20, tmp_path)
    recording, shadow = done["recording"], done["shadow"]
    assert recording["with_refs"]["p50"] > 0 and recording["row_alone"]["p50"] > 0
    assert shadow["plain"]["p50"] > 0 and shadow["shadowed"]["p50"] > 0
    md = (tmp_path / "search-costs.md").read_text()
    assert "Recording refs adds" in md and md.count("\n|") >= 5


def test_serve_and_isolation_bench_smoke(tmp_path):
    """The serve and isolation benchmarks run end to end on tiny inputs (the numbers are in docs/bench)."""
    from pathlib import Path

    from halomem.bench.datasets import load_locomo
    from halomem.bench.isolation import run_isolation
    from halomem.bench.serve import run_serve

    served = run_serve(400, [1, 2], 10, tmp_path, cli_repeats=1)
    assert [leg["clients"] for leg in served["legs"]] == [1, 2] and served["cli"]["remote_ms"] > 0
    locomo = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
    if not locomo.exists():
        return
    isolated = run_isolation(load_locomo(locomo, 1), ["keyword"], tmp_path, queries=25)
    [row] = isolated["results"]
    assert row["identical_rankings"] == 25 and row["isolated_p95"] > 0
    assert {p.name for p in tmp_path.iterdir()} >= {"serve.md", "isolation.md"}


@pytest.mark.skipif(not LOCOMO.exists(), reason="shared/data/locomo10.json not beside the checkout")
def test_peers_bench_runs_both_stores_on_the_same_data(tmp_path):
    from halomem.bench.peers import run_peers

    result = run_peers(tmp_path, LOCOMO, lambda m: None, conversations=1, questions=25, writes=5, callers=2, rounds=1)
    systems = result["systems"]
    assert set(systems) == {"halomem", "langgraph PostgresStore"}  # a dev dependency: always measured here
    for row in systems.values():
        assert 0 <= row["ndcg@10"] <= 1 and row["search"]["p50"] > 0 and row["write"]["p50"] > 0
    assert systems["halomem"]["recall@10"] > 0.3  # both answer from the same 419 turns
    assert "halomem / this" in systems["langgraph PostgresStore"] and (tmp_path / "peers.md").exists()
    served = result["over_http"]["systems"]  # both behind their servers, 2 callers at once
    assert set(served) >= set(systems) and all(r["throughput_rps"] > 0 and r["p95"] > 0 for r in served.values())
    assert "## 2 callers over HTTP" in (tmp_path / "peers.md").read_text()
