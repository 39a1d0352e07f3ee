"""bench latency --as-of: plan() as of a past instant vs the present, on a store where a share of
the memories has been superseded since.

The short corpus is written with keys; an instant is taken; then ``superseded`` of the rows are
rewritten under the same keys (the keyed ingest supersedes them in bulk, through the write path);
a recent instant is taken and 1% more are rewritten. The present sees the newest versions, the
instants the versions of their time: each reads the same number of rows, an as-of read cannot use
the live-row partial indexes, and its statistics are corrected by the writes since: the cost this
measures, at the worst case (30% changed since) and the common one (1%).
"""
from __future__ import annotations

import json
import random
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from . import report
from .harness import ephemeral_kernel
from .latency import INGEST_CHUNK, WARM_SEED, measure, warm_up
from .synthetic import corpus, queries

SUPERSEDED_SHARE = 0.3
RECENT_SHARE = 0.01  # rewritten after the recent instant: what a few hours of writes change


def _keyed(ns_texts: list[str], keys: list[str]) -> bytes:
    return "\n".join(json.dumps({"key": key, "content": text}) for key, text in zip(keys, ns_texts)).encode()


def _instant() -> datetime:
    """A moment strictly between the writes before and after it."""
    time.sleep(0.01)
    when = datetime.now(timezone.utc)
    time.sleep(0.01)
    return when


def _rewrite(kernel, docs: dict[str, list[str]], rng: random.Random, share: float) -> int:  # noqa: ANN001
    """Rewrite ``share`` of each namespace's rows under their keys (superseding them); how many."""
    rewritten = 0
    for ns, texts in docs.items():
        picked = sorted(rng.sample(range(len(texts)), int(len(texts) * share)))
        rewritten += len(picked)
        for i in range(0, len(picked), INGEST_CHUNK):
            chunk = picked[i:i + INGEST_CHUNK]
            kernel.ingest_bytes(ns, _keyed([f"{texts[j]} (revised {share:g})" for j in chunk],
                                           [f"{ns}#{j}" for j in chunk]), label="bench:as-of")
    return rewritten


def run_as_of_latency(sizes: Sequence[int], drivers: Sequence[str], out_dir: Path, query_count: int = 100,
                      progress: Callable[[str], None] = lambda m: None,
                      superseded: float = SUPERSEDED_SHARE) -> dict:
    results = []
    for n in sizes:
        with ephemeral_kernel("hash") as kernel:
            started = time.perf_counter()
            docs = corpus(n)
            for ns, texts in docs.items():
                keys = [f"{ns}#{i}" for i in range(len(texts))]
                for i in range(0, len(texts), INGEST_CHUNK):
                    kernel.ingest_bytes(ns, _keyed(texts[i:i + INGEST_CHUNK], keys[i:i + INGEST_CHUNK]),
                                        label="bench:as-of")
            rng = random.Random(5)
            instant = _instant()
            rewritten = _rewrite(kernel, docs, rng, superseded)
            recent = _instant()
            recently = _rewrite(kernel, docs, rng, RECENT_SHARE)
            with kernel.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM ANALYZE")
            load_s = time.perf_counter() - started
            progress(f"{n} memories, {rewritten} superseded since the instant, {recently} since the recent one,"
                     f" loaded in {load_s:.1f}s")
            probes = queries(query_count)
            legs = {}
            for leg, when in (("present", None), ("as-of", instant), ("recent", recent)):
                warm_up(kernel, drivers, lambda i: queries(query_count, seed=WARM_SEED + i), as_of=when)
                legs[leg] = measure(kernel, drivers, probes, as_of=when)
            rows = {d: {"present_p50": legs["present"]["drivers"][d]["p50"],
                        "present_p95": legs["present"]["drivers"][d]["p95"],
                        "as_of_p50": legs["as-of"]["drivers"][d]["p50"],
                        "as_of_p95": legs["as-of"]["drivers"][d]["p95"],
                        "recent_p50": legs["recent"]["drivers"][d]["p50"],
                        "recent_p95": legs["recent"]["drivers"][d]["p95"]} for d in drivers}
            for d, r in rows.items():
                r["ratio_p95"] = r["as_of_p95"] / r["present_p95"]
                r["recent_ratio_p95"] = r["recent_p95"] / r["present_p95"]
                progress(f"{n} {d}: present p95 {r['present_p95']:.1f}ms, as-of p95 {r['as_of_p95']:.1f}ms"
                         f" ({r['ratio_p95']:.2f}x), recent {r['recent_p95']:.1f}ms ({r['recent_ratio_p95']:.2f}x)")
            results.append({"memories": n, "superseded": rewritten, "superseded_recently": recently,
                            "load_seconds": load_s, "drivers": rows})
    md = markdown(results)
    data = {"results": results, "superseded_share": superseded}
    report.write(out_dir, "latency-as-of", data, md)
    return {**data, "markdown": md}


METHOD = """The short corpus of `bench latency` (one-line org memories over a 16-namespace tree,
hash embedder), written with keys through the keyed ingest; an instant is taken; then 30% of each
namespace's rows are rewritten under their keys, which supersedes them in bulk through the write
path; a recent instant is taken; then 1% more are rewritten; `VACUUM ANALYZE`. 100 probes from
callers at every depth (k = 10), each driver's `plan()` timed over a fresh ScopedView for the
present, the instant (30% of the rows changed since: the worst case) and the recent instant (the
30% are history, 1% changed since: an incident a few hours back), each leg after its own warm-up
passes of other queries. An as-of read's BM25 statistics are today's lexicon minus the lexicon's
events since its instant (schema.lexicon_events: one row per write, namespace and lexeme), so their
cost grows with the writes since that touched the query's words, not with the rows they changed."""


def markdown(results: list[dict]) -> str:
    headers = ["memories", "superseded since / recently", "driver", "present p50 ms", "present p95 ms",
               "as-of p50 ms", "as-of p95 ms", "as-of / present p95", "recent p50 ms", "recent p95 ms",
               "recent / present p95"]
    rows = [[r["memories"], f"{r['superseded']} / {r['superseded_recently']}", d, v["present_p50"], v["present_p95"],
             v["as_of_p50"], v["as_of_p95"], v["ratio_p95"], v["recent_p50"], v["recent_p95"], v["recent_ratio_p95"]]
            for r in results for d, v in r["drivers"].items()]
    return "# plan() latency as of a past instant\n\n" + METHOD + "\n\n" + report.markdown_table(headers, rows) + "\n"
