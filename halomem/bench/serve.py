"""bench serve: search over HTTP vs in-process `Kernel.search`, at 1, 4 and 16 concurrent clients,
in the same run on the same store; and remote vs local `halomem search` wall time.

One ephemeral embedded server holds the corpus. The in-process legs drive a kernel in this
process with N threads; the HTTP legs drive a real `halomem serve` process (no rate limit, no
access log) with N threads of httpx2 clients, each with a token of its caller's namespace.
"""
from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

import httpx2

from ..db.embedded import ephemeral_server
from . import report
from .cli_speed import wall_ms
from .serving import bearer, start_server
from .synthetic import NAMESPACES, corpus, queries

INGEST_CHUNK = 50_000


def load_corpus(kernel, memories: int, label: str) -> None:  # noqa: ANN001 - a booted halomem.kernel.Kernel
    """The synthetic org's memories into ``kernel``'s store, then VACUUM ANALYZE (the benches' start)."""
    for ns, texts in corpus(memories).items():
        for i in range(0, len(texts), INGEST_CHUNK):
            kernel.ingest_texts(ns, texts[i:i + INGEST_CHUNK], label=label)
    with kernel.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM ANALYZE")


def _pcts(ms: list[float]) -> dict[str, float]:
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50": q[49], "p95": q[94]}


def drive(clients: int, total: int, call: Callable[[int, int], None]) -> dict[str, float]:
    """``total`` calls spread over ``clients`` threads; latency percentiles and throughput."""
    latencies: list[float] = []
    failed: list[BaseException] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        mine = []
        try:
            for i in range(w, total, clients):
                started = time.perf_counter()
                call(w, i)
                mine.append((time.perf_counter() - started) * 1000)
        except Exception as exc:  # noqa: BLE001 - handed to the caller below, not lost in a thread
            failed.append(exc)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if failed:
        raise failed[0]
    return {**_pcts(latencies), "throughput_rps": total / wall}


def _drive_alternating(total: int, first: Callable[[int, int], None],
                       second: Callable[[int, int], None]) -> tuple[dict[str, float], dict[str, float]]:
    """One client alternating the two paths query by query: this VM's speed drifts by 1.5x within
    minutes, and alternating puts the drift on both paths alike instead of on one leg."""
    spent: tuple[list[float], list[float]] = ([], [])
    for i in range(total):
        for call, out in ((first, spent[0]), (second, spent[1])) if i % 2 else ((second, spent[1]), (first, spent[0])):
            started = time.perf_counter()
            call(0, i)
            out.append((time.perf_counter() - started) * 1000)
    return tuple({**_pcts(ms), "throughput_rps": 1000 * len(ms) / sum(ms)} for ms in spent)  # type: ignore[return-value]


def run_serve(memories: int, concurrency: Sequence[int], requests: int, out_dir: Path,
              progress: Callable[[str], None] = lambda m: None, cli_repeats: int = 5) -> dict:
    from ..config import Settings
    from ..kernel import Kernel
    from ..ops import for_operator

    probes = queries(max(requests, 200), seed=23)
    with ephemeral_server(prefix="halomem-bench-serve-") as url:
        kernel = Kernel.boot(Settings(home=Path("/nonexistent-halomem-home"), database_url=url, embedder="hash"),
                             mount_plugins=False)
        try:
            load_corpus(kernel, memories, "bench:serve")
            progress(f"{memories} memories loaded")
            tokens = {ns: for_operator(kernel, ns).create_token(None, "bench", "read").token for ns in NAMESPACES}
            env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
            env.update(HALOMEM_DATABASE_URL=url, HALOMEM_EMBEDDER="hash")
            server = start_server(env, "--rate-limit", "0", "--no-access-log")
            try:
                legs = _measure(kernel, server.url, tokens, probes, concurrency, requests, progress)
                cli = _cli_legs(env, server.url, tokens, cli_repeats)
                progress(f"remote search {cli['remote_ms']:.0f} ms vs local {cli['local_ms']:.0f} ms")
            finally:
                server.stop()
        finally:
            kernel.close()
    data = {"memories": memories, "requests_per_leg": requests, "legs": legs, "cli": cli}
    md = markdown(data)
    report.write(out_dir, "serve", data, md)
    return {**data, "markdown": md}


def _measure(kernel, url: str, tokens: dict[str, str], probes: list[tuple[str, str]],  # noqa: ANN001
             concurrency: Sequence[int], requests: int, progress: Callable[[str], None]) -> list[dict]:
    clients = [httpx2.Client(base_url=url, timeout=60) for _ in range(max(concurrency))]

    def in_process(w: int, i: int) -> None:
        ns, text = probes[i % len(probes)]
        kernel.search(ns, text, k=10)

    def over_http(w: int, i: int) -> None:
        ns, text = probes[i % len(probes)]
        r = clients[w].post("/v1/search", json={"query": text, "k": 10}, headers=bearer(tokens[ns]))
        r.raise_for_status()

    legs = []
    try:
        drive(2, 40, in_process)  # warm both paths
        drive(2, 40, over_http)
        for c in concurrency:
            if c == 1:
                local, remote = _drive_alternating(requests, in_process, over_http)
            else:
                local = drive(c, requests, in_process)
                remote = drive(c, requests, over_http)
            legs.append({"clients": c, "in_process": local, "http": remote,
                         "p50_overhead_ms": remote["p50"] - local["p50"],
                         "throughput_ratio": remote["throughput_rps"] / local["throughput_rps"]})
            progress(f"{c} clients: in-process p50 {local['p50']:.1f} ms {local['throughput_rps']:.0f}/s;"
                     f" http p50 {remote['p50']:.1f} ms {remote['throughput_rps']:.0f}/s")
    finally:
        for client in clients:
            client.close()
    return legs


def _cli_legs(env: dict[str, str], url: str, tokens: dict[str, str], repeats: int) -> dict[str, float]:
    """Median wall times of fresh processes, local and remote alternating."""
    hm = [sys.executable, "-m", "halomem.cli.main", "search", "--json", "who migrated billing"]
    remote_env = {k: v for k, v in env.items() if k != "HALOMEM_DATABASE_URL"}
    remote_env.update(HALOMEM_URL=url, HALOMEM_TOKEN=tokens["acme/eng"])
    local, remote = [], []
    for _ in range(repeats):
        local.append(wall_ms(hm + ["--ns", "acme/eng"], env))
        remote.append(wall_ms(hm, remote_env))
    local_ms, remote_ms = statistics.median(local), statistics.median(remote)
    return {"local_ms": local_ms, "remote_ms": remote_ms, "ratio": remote_ms / local_ms, "repeats": repeats}


METHOD = """Synthetic org memories over a 16-namespace tree (`halomem/bench/synthetic.py`), hash embedder, one
ephemeral embedded server, `VACUUM ANALYZE` after the load. Queries from callers at every depth,
k = 10, the default (baseline) policy. Each leg sends the same number of searches; in-process legs
call `Kernel.search` from N threads of this process, HTTP legs send `POST /v1/search` from N
threads (httpx2, keep-alive) to a `halomem serve` process on 127.0.0.1 (no rate limit, no access
log). At 1 client one thread alternates the two paths query by query, so the machine's drift in
speed falls on both alike. Client and server share the machine's cores. CLI: median wall time of
a fresh `halomem search --json` process, local (kernel against the same database) and remote
(`HALOMEM_URL` + `HALOMEM_TOKEN`) alternating."""


def markdown(data: dict) -> str:
    rows = []
    for leg in data["legs"]:
        for path in ("in_process", "http"):
            v = leg[path]
            rows.append([leg["clients"], "in-process Kernel.search" if path == "in_process" else "HTTP /v1/search",
                         v["p50"], v["p95"], v["throughput_rps"]])
    ratios = [[leg["clients"], leg["p50_overhead_ms"], leg["throughput_ratio"]] for leg in data["legs"]]
    cli = data["cli"]
    return (f"# Serving: HTTP vs in-process search ({data['memories']} memories)\n\n{METHOD}\n\n"
            + report.markdown_table(["clients", "path", "p50 ms", "p95 ms", "searches/s"], rows)
            + "\n\n" + report.markdown_table(["clients", "HTTP p50 overhead ms", "HTTP / in-process throughput"],
                                             ratios)
            + "\n\n" + report.markdown_table(["`halomem search`", "median ms"],
                                             [["local (kernel in the process)", cli["local_ms"]],
                                              ["remote (HALOMEM_URL)", cli["remote_ms"]],
                                              ["remote / local", cli["ratio"]]]))
