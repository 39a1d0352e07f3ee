"""bench isolation: plan() latency of each driver in-process vs in a sandboxed worker, in one run on
the same LoCoMo store, and whether the two return the same ranking (so the same quality)."""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Callable, Sequence

from ..index import Scope
from ..sandbox.cartridge import from_module
from ..sandbox.isolated import IsolatedDriver
from ..planning import run_driver
from ..types import Namespace
from . import report
from .datasets import Dataset
from .harness import EVAL_BUDGET, EVAL_K, ephemeral_kernel, load
from ..ranking_metrics import score_all

WARM_UP = 20  # questions run through both before measuring (caches, the worker's first imports)


def _pcts(ms: list[float]) -> dict[str, float]:
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50": q[49], "p95": q[94]}


def run_isolation(ds: Dataset, drivers: Sequence[str], out_dir: Path, queries: int | None = None,
                  embedder: str = "hash", progress: Callable[[str], None] = lambda m: None) -> dict:
    results = []
    probes = ds.queries[:queries] if queries else ds.queries
    with ephemeral_kernel(embedder) as kernel:
        to_doc = load(kernel, ds, progress)
        for name in drivers:
            local = kernel.registry.get(name)
            isolated = IsolatedDriver(from_module(f"halomem.drivers.{name}", name))
            times = {"in-process": [], "isolated": []}
            recall = {"in-process": 0.0, "isolated": 0.0}
            same = 0
            try:
                isolated.capabilities()  # start the worker outside the measurement
                for i, q in enumerate(list(probes[:WARM_UP]) + list(probes)):
                    warm = i < WARM_UP
                    ranked = {}
                    for label, driver in (("in-process", local), ("isolated", isolated)):
                        with kernel.index.reader() as reader:
                            run = run_driver(reader, Scope(Namespace(q.namespace)), kernel.embedders, driver, q.text,
                                             EVAL_K, EVAL_BUDGET)
                        refs, elapsed = run.refs, run.ms
                        if warm:
                            continue
                        times[label].append(elapsed)
                        ranked[label] = [(r.ref, round(r.score, 9)) for r in refs]
                        recall[label] += score_all([to_doc.get(r.ref, r.ref) for r in refs], set(q.relevant))["R@10"]
                    if not warm:
                        same += ranked["in-process"] == ranked["isolated"]
            finally:
                isolated.close()
            row = {"driver": name, "queries": len(probes), "identical_rankings": same,
                   **{f"{label}_{k}": v for label, ms in times.items() for k, v in _pcts(ms).items()},
                   **{f"{label}_R@10": v / len(probes) for label, v in recall.items()}}
            row["p95_delta_ms"] = row["isolated_p95"] - row["in-process_p95"]
            results.append(row)
            progress(f"{name}: in-process p95 {row['in-process_p95']:.1f} ms, isolated p95 {row['isolated_p95']:.1f} ms"
                     f" (+{row['p95_delta_ms']:.1f}), identical {same}/{len(probes)}")
    headers = ["driver", "queries", "in-process p50", "in-process p95", "isolated p50", "isolated p95",
               "p95 delta ms", "identical rankings", "R@10 in-process", "R@10 isolated"]
    rows = [[r["driver"], r["queries"], r["in-process_p50"], r["in-process_p95"], r["isolated_p50"],
             r["isolated_p95"], r["p95_delta_ms"], f"{r['identical_rankings']}/{r['queries']}",
             r["in-process_R@10"], r["isolated_R@10"]] for r in results]
    md = (f"# Isolated vs in-process plan() on {ds.name} ({embedder} embedder)\n\n"
          "Each question is planned by the driver in this process and by the same driver in a sandboxed "
          "worker (Landlock, seccomp, rlimits; the view proxied over a pipe), alternately, on the same store. "
          f"The worker is started and {WARM_UP} questions run through both before the measurement (workers are "
          "reused). Milliseconds.\n\n"
          + report.markdown_table(headers, rows))
    data = {"dataset": ds.name, "embedder": embedder, "results": results}
    report.write(out_dir, "isolation", data, md)
    return {**data, "markdown": md}
