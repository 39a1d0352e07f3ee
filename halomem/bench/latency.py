"""bench latency: plan() p50/p95/p99 per driver against the floor.

The floor is the raw index work any driver needs: the vector probe (vector_search, k=30: an HNSW walk,
or an exact scan of a group where that is cheaper) plus the raw GIN probe (ids matching any query
term, unranked, limit 500), through the same ACL predicate.
"""
from __future__ import annotations

import statistics
import time
from datetime import datetime
from pathlib import Path
from typing import Callable, Sequence

from ..db.migrations import ADVISED_NAMESPACE_INDEX_ROWS, create_vector_index, drop_vector_index
from ..errors import InvalidInputError
from ..index import Scope
from ..planning import run_driver
from ..types import Namespace
from . import report
from .harness import ephemeral_kernel
from .synthetic import LongCorpus, corpus, queries

INGEST_CHUNK = 50_000
BUILD_INDEX_AFTER = 200_000  # from this size the HNSW index is built after the load, as a bulk restore would


def _pcts(ms: list[float]) -> dict[str, float]:
    q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else [ms[0]] * 99
    return {"p50": q[49], "p95": q[94], "p99": q[98]}


def measure(kernel, drivers: Sequence[str], probes: list[tuple[str, str]], k: int = 10,  # noqa: ANN001
            as_of: datetime | None = None) -> dict:
    """``as_of``: every probe reads the store as it stood then (bench latency --as-of)."""
    floor_ms, per_driver = [], {d: [] for d in drivers}
    for ns, text in probes:
        scope = Scope(Namespace(ns), None, as_of)
        [embedding] = kernel.embedder.embed([text])
        with kernel.index.reader() as reader:
            started = time.perf_counter()
            reader.vector_search(scope, embedding, max(3 * k, 20))
            reader.lexical_probe(scope, text, 500)
            floor_ms.append((time.perf_counter() - started) * 1000)
        for name in drivers:
            driver = kernel.registry.get(name)
            with kernel.index.reader() as reader:
                per_driver[name].append(run_driver(reader, scope, kernel.embedders, driver, text, k, 2000).ms)
    floor = _pcts(floor_ms)
    stats = {d: _pcts(ms) for d, ms in per_driver.items()}
    return {"floor": floor, "drivers": {d: {**p, "ratio_p95": p["p95"] / floor["p95"]} for d, p in stats.items()}}


WARM_SEED = 12  # the first warm-up pass's probes: other queries than the measured ones (seed 11)
WARM_PASSES = 10  # at most; each pass has other queries (seeds 12, 13, ...)
WARM_READ_SHARE = 0.01  # steady: a pass finds all but 1% of the blocks it touches in shared buffers
STATS_FLUSH_S = 1.5  # idle backends report their block counts at most once a second


def _block_counts(kernel) -> tuple[int, int]:  # noqa: ANN001
    """(read, hit) blocks of this database so far, as the backends have reported them."""
    with kernel.engine.connect() as conn:
        read, hit = conn.exec_driver_sql(
            "SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname = current_database()").one()
    return int(read), int(hit)


def warm_up(kernel, drivers: Sequence[str], probe_passes: Callable[[int], list[tuple[str, str]]],  # noqa: ANN001
            passes: int = WARM_PASSES, as_of: datetime | None = None) -> list[dict[str, int]]:
    """Run passes of other probes until the buffer pool holds what probes touch, as in a serving
    process that has answered many queries; returns each pass's blocks found in shared buffers
    (hit) and read from outside them (read). One pass of 100 probes was not enough at 1M:
    replaying the measured probes after it cut the floor's p95 from 44 to 13 ms, so the report
    had measured first touches of pages, not plan()."""
    done = []
    for i in range(passes):
        before = _block_counts(kernel)
        measure(kernel, drivers, probe_passes(i), as_of=as_of)
        time.sleep(STATS_FLUSH_S)
        read, hit = (now - then for now, then in zip(_block_counts(kernel), before))
        done.append({"read": read, "hit": hit})
        if read < WARM_READ_SHARE * (read + hit):
            break
    return done


def _corpus_and_probes(kind: str, n: int, query_count: int
                       ) -> tuple[dict[str, list[str]], list[tuple[str, str]], Callable[[int], list[tuple[str, str]]]]:
    """The corpus, the measured probes and warm-up pass i's probes (as many, other queries)."""
    if kind == "short":
        return corpus(n), queries(query_count), lambda i: queries(query_count, seed=WARM_SEED + i)
    if kind == "long":
        long = LongCorpus()
        docs = long.corpus(n)
        return docs, long.queries(docs, query_count), lambda i: long.queries(docs, query_count, seed=WARM_SEED + i)
    raise InvalidInputError(f"unknown corpus {kind!r} (short, long)")


def run_latency(sizes: Sequence[int], drivers: Sequence[str], out_dir: Path, query_count: int = 100,
                progress: Callable[[str], None] = lambda m: None, build_index_after: int = BUILD_INDEX_AFTER,
                corpora: Sequence[tuple[str, Sequence[int]]] | None = None) -> dict:
    """``corpora``: (kind, sizes) pairs, e.g. [("short", [10_000]), ("long", [20_000])];
    without it, the short corpus at ``sizes``."""
    results = []
    for kind, n in [(kind, n) for kind, ns in (corpora or [("short", sizes)]) for n in ns]:
        with ephemeral_kernel("hash") as kernel:
            started = time.perf_counter()
            deferred = n >= build_index_after
            if deferred:
                with kernel.engine.begin() as conn:
                    drop_vector_index(conn)
            docs, probes, warm = _corpus_and_probes(kind, n, query_count)
            for ns, texts in docs.items():
                for i in range(0, len(texts), INGEST_CHUNK):
                    kernel.ingest_texts(ns, texts[i:i + INGEST_CHUNK], label="bench:latency")
            if deferred:
                with kernel.engine.begin() as conn:
                    create_vector_index(conn, maintenance_work_mem="4GB")
            large = [ns for ns, texts in docs.items() if len(texts) >= ADVISED_NAMESPACE_INDEX_ROWS]
            for ns in large:  # as `halomem index create` would be run on them
                kernel.index_namespace(ns)
            with kernel.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                # as after a bulk restore: statistics for the planner, and the visibility map set now
                # rather than by an autovacuum that would run in the middle of the measurement
                conn.exec_driver_sql("VACUUM ANALYZE")
            load_s = time.perf_counter() - started
            progress(f"{kind} corpus, {n} memories loaded in {load_s:.1f}s")
            # a serving process's steady state: what probes touch is in the buffer pool, read by
            # passes of other queries (not the measured ones)
            passes = warm_up(kernel, drivers, warm)
            m = measure(kernel, drivers, probes)
            results.append({"corpus": kind, "memories": n, "load_seconds": load_s, "namespace_indexes": len(large),
                            "warm_up_passes": passes, **m})
            last = passes[-1]
            progress(f"{kind} {n}: warm after {len(passes)} passes "
                     f"(the last read {last['read'] / max(last['read'] + last['hit'], 1):.1%} of its blocks)")
            progress(f"{kind} {n}: floor p95 {m['floor']['p95']:.1f}ms; " + ", ".join(
                f"{d} p95 {v['p95']:.1f}ms ({v['ratio_p95']:.1f}x)" for d, v in m["drivers"].items()))
    md = markdown(results)
    data = {"corpora": [[kind, list(ns)] for kind, ns in (corpora or [("short", sizes)])], "results": results}
    report.write(out_dir, "latency", data, md)
    short = [r for r in results if r["corpus"] == "short"]
    series = {d: {r["memories"]: r["drivers"][d]["p95"] for r in short} for d in drivers}
    series["floor"] = {r["memories"]: r["floor"]["p95"] for r in short}
    report.line_plot(out_dir / "latency.png", "plan() p95 vs corpus size", series, "memories", "p95 ms")
    return {**data, "markdown": md}


METHOD = """Two corpora (`halomem/bench/synthetic.py`) over a 16-namespace tree: *short*, one-line org
memories (~100 characters, a ~100-word vocabulary), and *long*, 150-300-word paragraphs (~1,700
characters) over a 30,000-word vocabulary with Zipf-distributed frequencies (s = 1.07), each
paragraph about a few topic words, queried with 3-7 of one visible paragraph's words. Hash embedder,
the embedded server with halomem's settings (`halomem/db/tuning.py`). After the load, namespaces
of 50k+ rows get their own indexes (`halomem index create`: at 1M all 16, of ~62k rows each; none
below), then `VACUUM ANALYZE`, as after a bulk restore (from 200k rows the shared HNSW index is
built after the load). 100 probes from callers at every depth, k = 10, measured in a serving
process's steady state: first, passes of 100 other probes each (other seeds, never the measured
queries) until a pass finds 99% of the blocks it touches in shared buffers (`pg_stat_database`;
at most 10 passes; the passes each leg took are in latency.json). The
floor is the raw index work any driver needs: the vector probe (k = 30, as `vector_search` does it:
an HNSW walk, or an exact scan where that is cheaper) plus the raw lexical probe (ids matching any
query term, unranked, limit 500), both through the ACL predicate."""


def markdown(results: list[dict]) -> str:
    headers = ["corpus", "memories", "driver", "p50 ms", "p95 ms", "p99 ms", "p95 / floor"]
    rows = []
    for r in results:
        rows.append([r["corpus"], r["memories"], "floor (vector+GIN probes)", r["floor"]["p50"], r["floor"]["p95"], r["floor"]["p99"], 1.0])
        rows += [[r["corpus"], r["memories"], d, v["p50"], v["p95"], v["p99"], v["ratio_p95"]] for d, v in r["drivers"].items()]
    warmed = "; ".join(f"{r['corpus']} {r['memories']}: {len(r['warm_up_passes'])}" for r in results)
    return ("# plan() latency vs corpus size\n\n" + METHOD + "\n\n" + report.markdown_table(headers, rows)
            + f"\n\nWarm-up passes per leg: {warmed}.\n")
