"""bench serve --costs: what a search's record in the audit (its refs and kept query text) and a shadow
arm add to a search.

In-process over the synthetic corpus (hash embedder, so the embedder's time does not hide the
differences), one kernel, one client, the legs alternated query by query (this VM's speed drifts).
Recording: every search's audit write (Searcher._audit_search: the chain row with refs, the
`search_seen` rows and the salted query text, one transaction) is timed around the real call, and
beside it, on the same store, the row a search wrote before refs were recorded (the same fields
without `refs`/`query`, alone in its transaction): the difference is what recording refs costs.
Shadow: the same queries in a namespace whose policy is `fusion` alone and in one whose policy
shadows `keyword` beside `fusion` on every query (`pct_b` 100, the worst case), both holding the same
rows; the cost of a shadow at a split of p% is about p% of the difference.
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Callable

from ..db.embedded import ephemeral_server
from . import report
from .serve import load_corpus
from .synthetic import corpus, queries

PLAIN_NS, SHADOWED_NS = "bench/plain", "bench/shadowed"


def _pcts(ms: list[float]) -> dict[str, float]:
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50": q[49], "p95": q[94]}


def run_search_costs(memories: int, requests: int, out_dir: Path,
                     progress: Callable[[str], None] = lambda m: None) -> dict:
    from .. import audit
    from ..config import Settings
    from ..kernel import Kernel

    probes = [text for _, text in queries(max(requests, 200), seed=31)][:requests]
    with ephemeral_server(prefix="halomem-bench-costs-") as url:
        kernel = Kernel.boot(Settings(home=Path("/nonexistent-halomem-home"), database_url=url, embedder="hash"),
                             mount_plugins=False)
        try:
            load_corpus(kernel, memories, "bench:costs")
            rows = corpus(memories)["acme/eng"][:2000]
            for ns in (PLAIN_NS, SHADOWED_NS):  # the same rows in both, so the legs differ by policy only
                kernel.ingest_texts(ns, rows, label="bench:costs")
            kernel.set_policy(PLAIN_NS, {"retriever": "fusion"})
            kernel.set_policy(SHADOWED_NS, {"ab_test": {"a": "fusion", "b": "keyword", "pct_b": 100, "shadow": True}})
            progress(f"{memories} memories loaded, {len(rows)} in each policy namespace")
            recording, row_alone, plain, shadowed = [], [], [], []
            searcher = kernel.searcher
            real = searcher._audit_search

            def timed(ns, record, request_id, *rest):  # noqa: ANN001, ANN202 - the real write, timed
                bare = dict(record)  # before the real write adds refs and the query's digest
                started = time.perf_counter()
                real(ns, record, request_id, *rest)
                recording.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                with kernel.engine.begin() as conn:  # what a search's row was before refs were recorded
                    audit.append(conn, ns.path, "search", bare, request_id + "-bare")
                row_alone.append((time.perf_counter() - started) * 1000)

            for query in probes[:20]:  # warm both paths
                kernel.search(PLAIN_NS, query, k=10)
                kernel.search(SHADOWED_NS, query, k=10)
            searcher._audit_search = timed
            try:
                for i, query in enumerate(probes):
                    legs = ((PLAIN_NS, plain), (SHADOWED_NS, shadowed))
                    for ns, spent in legs if i % 2 else legs[::-1]:
                        started = time.perf_counter()
                        kernel.search(ns, query, k=10)
                        spent.append((time.perf_counter() - started) * 1000)
            finally:
                searcher._audit_search = real
        finally:
            kernel.close()
    rec, bare = _pcts(recording), _pcts(row_alone)
    data = {"memories": memories, "requests": requests,
            "recording": {"with_refs": rec, "row_alone": bare, "added_p50_ms": rec["p50"] - bare["p50"]},
            "shadow": {"plain": _pcts(plain), "shadowed": _pcts(shadowed),
                       "added_p50_ms": _pcts(shadowed)["p50"] - _pcts(plain)["p50"]}}
    progress(f"recording refs adds {data['recording']['added_p50_ms']:.2f} ms at p50;"
             f" a shadow on every query adds {data['shadow']['added_p50_ms']:.2f} ms")
    md = markdown(data)
    report.write(out_dir, "search-costs", data, md)
    return {**data, "markdown": md}


def markdown(data: dict) -> str:
    r, s = data["recording"], data["shadow"]
    return (f"# What recording a search and a shadow arm cost ({data['memories']} memories, "
            f"{data['requests']} searches per leg)\n\n{__doc__.split(chr(10), 3)[3].strip()}\n\n"
            + report.markdown_table(["what", "p50 ms", "p95 ms"], [
                ["the search's audit write, with refs and query text", r["with_refs"]["p50"], r["with_refs"]["p95"]],
                ["the audit row alone, as before refs", r["row_alone"]["p50"], r["row_alone"]["p95"]],
                ["search, policy fusion", s["plain"]["p50"], s["plain"]["p95"]],
                ["search, fusion shadowed by keyword on every query", s["shadowed"]["p50"], s["shadowed"]["p95"]],
            ])
            + f"\n\nRecording refs adds {r['added_p50_ms']:.3f} ms to a search at p50 (goal <= 1 ms); a shadow"
              f" on every query adds {s['added_p50_ms']:.3f} ms.\n")
