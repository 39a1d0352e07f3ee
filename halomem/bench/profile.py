"""bench profile: where a search's time goes, step by step, in process and over HTTP, at 1 and 8
concurrent callers (issue 52's first deliverable: what a caller pays, with `plan()` beside it).

The synthetic org (N memories) on an ephemeral embedded server with the default embedder (what a
new store gets: the query is embedded as a caller's would be). Each step is timed around the real
call on this kernel (the wrappers add a clock read each, nothing else):

- policy: the lineage's policies read (one statement);
- embed: the search's wait for its query's embedding: all of it here (a transformer on every core
  embeds when the vector is first asked for), or what the policy read and the driver's lexical
  reads did not hide when it runs on a worker from the search's start (embed.early: a transformer
  on all cores but one, as `halomem serve` runs it, or an embedding service);
- plan: the driver's `plan()` as planning.run_driver times it;
- view and checks: the rest of run_driver (the ScopedView, the admitted-refs filter, the relevance
  scores and the tail cut);
- materialise: the hits' rows fetched and the result built;
- audit: the search's chain row with its refs and salted query (one transaction, the chain's lock);
- other: the rest of Kernel.search (the read router, fallbacks, the result's fields).

Over HTTP the same kernel serves `halomem serve`'s app in process (uvicorn, loopback, the default
fair shares): the server's steps as above, and `edge` = what the client waited minus the search
inside (authentication, fair share, the pipeline, serialisation, HTTP). Callers are threads, each
with its own queries, tokens one per namespace of the synthetic org; a 429 (over the principal's or
the organisation's share) is retried after its Retry-After, and the wait counts.
"""
from __future__ import annotations

import statistics
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from . import report
from .harness import ephemeral_kernel
from .serve import load_corpus
from .synthetic import queries

STEPS = ("policy", "embed", "plan", "view and checks", "materialise", "audit", "other")


class Clock:
    """Per-thread step times of the search in flight, and every search's, by step."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.lock = threading.Lock()
        self.searches: list[dict[str, float]] = []

    def current(self) -> dict[str, float]:
        if not hasattr(self.local, "steps"):
            self.local.steps = defaultdict(float)
        return self.local.steps

    def timed(self, step: str, work: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return work(*args, **kwargs)
            finally:
                self.current()[step] += (time.perf_counter() - started) * 1000
        return run

    def finish(self, total_ms: float) -> None:
        steps = dict(self.current())
        self.local.steps = defaultdict(float)
        steps["view and checks"] = steps.pop("run_driver", 0.0) - steps.get("plan", 0.0) - steps.get("embed", 0.0)
        steps["other"] = total_ms - sum(steps.get(s, 0.0) for s in STEPS if s != "other")
        steps["search"] = total_ms
        with self.lock:
            self.searches.append(steps)


def _instrument(kernel: Any, clock: Clock) -> Callable[[], None]:
    """Wrap the search's steps on this kernel; returns what undoes it."""
    from .. import search

    searcher = kernel.searcher
    saved = [(search, "lineage_policies", search.lineage_policies), (search, "run_driver", search.run_driver)]
    search.lineage_policies = clock.timed("policy", search.lineage_policies)
    real_run = search.run_driver

    def run_driver(*args: Any, **kwargs: Any) -> Any:
        plan = clock.timed("run_driver", real_run)(*args, **kwargs)
        clock.current()["plan"] += plan.ms
        clock.current()["embed"] += plan.embedding_wait_ms
        return plan

    search.run_driver = run_driver
    searcher._materialize = clock.timed("materialise", searcher._materialize)
    searcher._audit_search = clock.timed("audit", searcher._audit_search)

    def undo() -> None:
        for module, name, value in saved:
            setattr(module, name, value)
        del searcher._materialize, searcher._audit_search
    return undo


def run_profile(memories: int, searches: int, out_dir: Path, progress: Callable[[str], None] = lambda m: None) -> dict:
    import httpx2
    import uvicorn

    from ..ops import for_operator
    from ..server.app import create_app
    from ..ports import free_port

    probes = queries(searches * 8 + 50, seed=52)
    legs: dict[str, tuple[list[dict[str, float]], list[float]]] = {}
    with ephemeral_kernel("default") as kernel:
        embedder = kernel.embedder.name
        load_corpus(kernel, memories, "bench:profile")
        progress(f"{memories} memories loaded ({embedder})")
        for ns, text in probes[:20]:  # warm: sessions, caches, the planner
            kernel.search(ns, text)
        clock = Clock()
        undo = _instrument(kernel, clock)
        real_search = kernel.search

        def timed_search(*args: Any, **kwargs: Any) -> Any:  # the whole search, in whichever thread runs it
            started = time.perf_counter()
            try:
                return real_search(*args, **kwargs)
            finally:
                clock.finish((time.perf_counter() - started) * 1000)

        kernel.search = timed_search
        try:
            for callers in (1, 8):
                clock.searches = []
                with ThreadPoolExecutor(callers) as pool:
                    list(pool.map(lambda job: kernel.search(job[0], job[1]), probes[:searches * callers]))
                legs[f"in process, {_callers(callers)}"] = (clock.searches, [])
                progress(f"in process, {_callers(callers)}: {len(clock.searches)} searches")
            port = free_port()
            server = uvicorn.Server(uvicorn.Config(create_app(kernel, port=port, rate=0), host="127.0.0.1", port=port,
                                                   log_level="warning"))
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            while not server.started:
                time.sleep(0.05)
            tokens = {ns: for_operator(kernel, ns).create_token(None, "profile", "read").token
                      for ns in {ns for ns, _ in probes}}
            try:
                for callers in (1, 8):
                    clock.searches = []
                    waits: list[float] = []
                    retried: list[int] = []
                    local = threading.local()

                    def over_http(job: tuple[str, str]) -> None:
                        if not hasattr(local, "http"):
                            local.http = httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
                        started = time.perf_counter()
                        while True:  # a 429 (over the caller's fair share) is retried after Retry-After
                            answer = local.http.post("/v1/search", json={"query": job[1]},
                                                     headers={"Authorization": f"Bearer {tokens[job[0]]}"})
                            if answer.status_code != 429:
                                break
                            retried.append(1)
                            time.sleep(min(float(answer.headers.get("retry-after") or 0.05), 1.0))
                        waits.append((time.perf_counter() - started) * 1000)
                        if answer.status_code != 200:
                            raise RuntimeError(f"HTTP {answer.status_code}: {answer.text[:200]}")

                    with ThreadPoolExecutor(callers) as pool:
                        list(pool.map(over_http, probes[:searches * callers]))
                    legs[f"over HTTP, {_callers(callers)}, {len(retried)} retries after a 429"] = (clock.searches, waits)
                    progress(f"over HTTP, {_callers(callers)}: {len(waits)} searches, {len(retried)} retries")
            finally:
                server.should_exit = True
                thread.join(timeout=30)
        finally:
            kernel.search = real_search
            undo()
    return _report(legs, memories, embedder, out_dir)


def _callers(n: int) -> str:
    return f"{n} caller{'s' if n > 1 else ''}"


def _quantiles(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=100, method="inclusive")
    return q[49], q[94]


def _report(legs: dict[str, tuple[list[dict[str, float]], list[float]]], memories: int, embedder: str,
            out_dir: Path) -> dict:
    data: dict[str, Any] = {"memories": memories, "embedder": embedder, "legs": {}}
    md = [f"# Where a search's time goes ({memories} memories, {embedder})\n\n{__doc__.split(chr(10) + chr(10), 1)[1]}"]
    for leg, (rows, waits) in legs.items():
        mean_search = statistics.fmean(r["search"] for r in rows)
        table = []
        for step in (*STEPS, "search"):
            values = [r.get(step, 0.0) for r in rows]
            p50, p95 = _quantiles(values)
            table.append([step, p50, p95, statistics.fmean(values) / mean_search])
        if waits:
            p50, p95 = _quantiles(waits)
            table.append(["client waited", p50, p95, statistics.fmean(waits) / mean_search])
            table.append(["edge (waited - search, medians)", p50 - table[-2][1], None, None])
        data["legs"][leg] = {"searches": len(rows), "steps": {r[0]: {"p50": r[1], "p95": r[2], "of_search": r[3]}
                                                              for r in table}}
        md.append(f"\n## {leg} ({len(rows)} searches)\n\n" + report.markdown_table(
            ["step", "p50 ms", "p95 ms", "mean / search's mean"], table))
    text = "\n".join(md) + "\n"
    report.write(out_dir, "profile", data, text)
    return {**data, "markdown": text}
