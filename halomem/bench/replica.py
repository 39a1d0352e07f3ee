"""bench serve --replica: search over HTTP on one primary, then on the same primary with one hot
standby (HALOMEM_READ_DATABASE_URL), in one run on one store; the share of reads the replica
served, read-your-writes waits, and the CPU each database process spent.

Both databases are PostgreSQL 16 clusters from the embedded wheel's binaries on this machine
(halomem.db.external), the standby made with pg_basebackup and streaming; halomem runs under the
least-privilege owner role. The serving process, both databases and the clients share 2 cores.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

import httpx2

from . import report
from .serve import _pcts, drive, load_corpus
from .serving import bearer, start_server
from .synthetic import NAMESPACES, queries


def _cpu_seconds(pgdata: Path) -> float:
    """User + system CPU of a cluster: its postmaster, the backends alive now, and those that
    exited since it started (the kernel adds a reaped child's time to its parent's)."""
    import psutil

    root = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
    own = root.cpu_times()
    total = own.user + own.system + own.children_user + own.children_system
    for child in root.children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def run_replica(memories: int, concurrency: Sequence[int], requests: int, out_dir: Path, pairs: int = 300,
                progress: Callable[[str], None] = lambda m: None) -> dict:
    from ..config import Settings
    from ..db.external import ExternalPostgres
    from ..kernel import Kernel
    from ..ops import for_operator

    root = Path(tempfile.mkdtemp(prefix="halomem-bench-replica-", dir="/tmp"))
    root.chmod(0o755)
    primary = ExternalPostgres(root / "primary").start()
    standby = None
    try:
        kernel = Kernel.boot(Settings(home=root / "home", database_url=primary.owner_url, embedder="hash"),
                             mount_plugins=False)
        try:
            load_corpus(kernel, memories, "bench:replica")
            readers = {ns: for_operator(kernel, ns).create_token(None, "bench", "read").token for ns in NAMESPACES}
            writer = for_operator(kernel, "acme/eng").create_token(None, "bench-w", "read,write").token
        finally:
            kernel.close()
        standby = primary.add_standby(root / "standby")
        progress(f"{memories} memories loaded; standby on port {standby.port}")
        probes = queries(max(requests, 200), seed=29)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
        env.update(HALOMEM_HOME=str(root / "home"), HALOMEM_EMBEDDER="hash", HALOMEM_DATABASE_URL=primary.owner_url)
        setups = {"primary only": env, "primary + 1 replica": {**env, "HALOMEM_READ_DATABASE_URL": standby.owner_url}}
        legs, pair_legs = [], {}
        for setup, setup_env in setups.items():
            server = start_server(setup_env, "--rate-limit", "0", "--no-access-log", "--audit-heads-every", "0")
            try:
                legs += _search_legs(setup, server.url, readers, probes, concurrency, requests, primary, standby,
                                     progress)
                pair_legs[setup] = _pairs(server.url, writer, pairs, primary)
                progress(f"{setup}: read-your-writes read p50 {pair_legs[setup]['read_p50']:.1f} ms")
            finally:
                server.stop()
    finally:
        if standby is not None:
            standby.destroy()
        primary.destroy()
    data = {"memories": memories, "requests_per_leg": requests, "pairs": pairs, "legs": legs, "pairs_legs": pair_legs}
    md = markdown(data)
    report.write(out_dir, "serve-replica", data, md)
    return {**data, "markdown": md}


def _served_share(primary, since: int) -> tuple[int, int]:  # noqa: ANN001
    """(searches since audit row ``since``, of them served by a replica)."""
    total = int(primary.sql(f"SELECT count(*) FROM audit_log WHERE seq > {since} AND action = 'search'"))
    replica = int(primary.sql(f"SELECT count(*) FROM audit_log WHERE seq > {since} AND action = 'search'"
                              " AND detail LIKE '% db=127.0.0.1:%'"))
    return total, replica


def _search_legs(setup: str, url: str, tokens: dict[str, str], probes, concurrency, requests, primary, standby,  # noqa: ANN001
                 progress) -> list[dict]:  # noqa: ANN001
    clients = [httpx2.Client(base_url=url, timeout=60) for _ in range(max(concurrency))]

    def over_http(w: int, i: int) -> None:
        ns, text = probes[i % len(probes)]
        clients[w].post("/v1/search", json={"query": text, "k": 10}, headers=bearer(tokens[ns])).raise_for_status()

    legs = []
    try:
        drive(2, 40, over_http)  # warm
        for c in concurrency:
            since = int(primary.sql("SELECT coalesce(max(seq), 0) FROM audit_log"))
            cpu = {"primary": _cpu_seconds(primary.data), "replica": _cpu_seconds(standby.data)}
            measured = drive(c, requests, over_http)
            spent = {"primary": _cpu_seconds(primary.data) - cpu["primary"],
                     "replica": _cpu_seconds(standby.data) - cpu["replica"]}
            total, by_replica = _served_share(primary, since)
            legs.append({"setup": setup, "clients": c, **measured, "replica_share": by_replica / max(total, 1),
                         "cpu_primary_s": spent["primary"], "cpu_replica_s": spent["replica"]})
            progress(f"{setup}, {c} clients: p50 {measured['p50']:.1f} ms, p95 {measured['p95']:.1f} ms, "
                     f"{measured['throughput_rps']:.0f}/s, replica served {by_replica}/{total}")
    finally:
        for client in clients:
            client.close()
    return legs


def _pairs(url: str, token: str, pairs: int, primary) -> dict:  # noqa: ANN001
    """Write then read the write back: the read's latency (its wait for the replica included), the
    reads that missed their own write (must be 0), and where they were served."""
    reads, misses = [], 0
    since = int(primary.sql("SELECT coalesce(max(seq), 0) FROM audit_log"))
    with httpx2.Client(base_url=url, headers=bearer(token), timeout=60) as http:
        for i in range(pairs):
            word = f"ryw{i}q{time.monotonic_ns() % 10**9}"
            made = http.post("/v1/memories", json={"content": f"fact {word}"}).json()["id"]
            started = time.perf_counter()
            hits = http.post("/v1/search", json={"query": word, "k": 5}).json()["hits"]
            reads.append((time.perf_counter() - started) * 1000)
            misses += made not in [h["id"] for h in hits]  # visibility, not rank: earlier runs left look-alikes
    total, by_replica = _served_share(primary, since)
    q = _pcts(reads)
    return {"read_p50": q["p50"], "read_p95": q["p95"], "misses": misses, "replica_share": by_replica / max(total, 1),
            "median": statistics.median(reads)}


METHOD = """Synthetic org memories over a 16-namespace tree, hash embedder, a PostgreSQL 16 primary and one
streaming hot standby (pg_basebackup) from the embedded wheel's binaries, halomem under the
least-privilege owner role. Each setup runs a real `halomem serve` (no rate limit, no access log):
first with the primary only, then with the standby as HALOMEM_READ_DATABASE_URL, the same queries
from N client threads (httpx2, keep-alive) of callers at every depth, k = 10. The share of reads a
replica served is counted from the searches' audit rows (`db=`). CPU is the user + system time of
each cluster's processes during the leg (psutil). Read-your-writes: one principal writes a memory,
then searches for its unique word at once (k = 5); the read's latency includes any wait for the
standby's replay (at most 50 ms, then the primary), and a miss is a read whose hits lack the write."""


def markdown(data: dict) -> str:
    rows = [[leg["setup"], leg["clients"], leg["p50"], leg["p95"], leg["throughput_rps"], leg["replica_share"],
             leg["cpu_primary_s"], leg["cpu_replica_s"]] for leg in data["legs"]]
    pairs = [[setup, v["read_p50"], v["read_p95"], v["misses"], v["replica_share"]]
             for setup, v in data["pairs_legs"].items()]
    return (f"# Serving with a read replica ({data['memories']} memories)\n\n{METHOD}\n\n"
            + report.markdown_table(["setup", "clients", "p50 ms", "p95 ms", "searches/s", "replica share",
                                     "CPU s primary", "CPU s replica"], rows)
            + f"\n\nRead-your-writes, {data['pairs']} write-then-read pairs:\n\n"
            + report.markdown_table(["setup", "read p50 ms", "read p95 ms", "own writes missed", "replica share"],
                                    pairs))
