"""bench serve --noisy: is one organisation's search slowed by another's flood?

One `halomem serve` (the store's default embedder, the server's default limits) and three legs, each
timing the same sequential searches of a *victim* principal (globex) over REST:

- idle: nothing else runs;
- flood: one principal of another organisation (acme) searches from N threads at once, half over
  REST and half over MCP (tools/call), as fast as the server answers (a 429 is retried after its
  Retry-After, as a well-behaved client would);
- batch: that principal sends maximal `remember_many` batches (100 memories of 64 KiB) one after
  another for the whole leg (with the default embedder one such batch embeds for minutes: the leg
  times the victim while it runs).

The report gives the victim's p50/p95 per leg, their ratio to idle, and what the noisy principal got
(answers, 429s). Goal (issue 38): victim p50 <= 1.5x idle and p95 <= 2x in both noisy legs.
"""
from __future__ import annotations

import os
import random
import statistics
import threading
import time
from pathlib import Path
from typing import Callable

import httpx2

from ..db.embedded import ephemeral_server
from ..limits import MAX_BATCH, MAX_CONTENT_CHARS
from . import report
from .serving import bearer, start_server
from .synthetic import corpus, queries

VICTIM_NS, NOISY_NS = "globex/rnd", "acme/eng"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def run_noisy(memories: int, requests: int, threads: int, out_dir: Path,
              progress: Callable[[str], None] = lambda m: None, server_args: tuple[str, ...] = ()) -> dict:
    from ..config import Settings
    from ..kernel import Kernel
    from ..ops import for_operator

    with ephemeral_server(prefix="halomem-bench-noisy-") as url:
        kernel = Kernel.boot(Settings(home=Path("/nonexistent-halomem-home"), database_url=url), mount_plugins=False)
        try:
            embedder = kernel.embedders.current.name
            for ns, texts in corpus(memories).items():
                kernel.ingest_texts(ns, texts, label="bench:noisy")
            with kernel.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM ANALYZE")
            progress(f"{memories} memories loaded ({embedder})")
            victim = for_operator(kernel, VICTIM_NS).create_token(None, "victim", "read").token
            noisy = for_operator(kernel, NOISY_NS).create_token(None, "noisy", "read,write").token
        finally:
            kernel.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
        env.update(HALOMEM_DATABASE_URL=url)
        server = start_server(env, "--no-access-log", *server_args)
        try:
            probes = [text for ns, text in queries(max(requests, 200), seed=29)]
            legs = _legs(server.url, victim, noisy, probes, requests, threads, progress)
        finally:
            server.stop()
    idle = legs[0]["victim"]
    for leg in legs:
        leg["p50_ratio"] = leg["victim"]["p50"] / idle["p50"]
        leg["p95_ratio"] = leg["victim"]["p95"] / idle["p95"]
    data = {"memories": memories, "embedder": embedder, "requests_per_leg": requests, "flood_threads": threads,
            "server_args": list(server_args), "legs": legs}
    md = markdown(data)
    report.write(out_dir, "serve-noisy", data, md)
    return {**data, "markdown": md}


def _legs(url: str, victim: str, noisy: str, probes: list[str], requests: int, threads: int,
          progress: Callable[[str], None]) -> list[dict]:
    with httpx2.Client(base_url=url, timeout=120, headers=bearer(victim)) as client:
        def victim_search(i: int) -> float:
            started = time.perf_counter()
            client.post("/v1/search", json={"query": probes[i % len(probes)], "k": 10}).raise_for_status()
            return (time.perf_counter() - started) * 1000

        for i in range(20):  # warm the server's paths and the database's caches
            victim_search(i)
        legs = []
        for name, noise in (("idle", None), ("flood", _flood(url, noisy, probes, threads)),
                            ("batch", _batches(url, noisy))):
            counts = noise.start() if noise else None
            time.sleep(0.5 if noise else 0)  # let the noise reach its steady state
            spent = [victim_search(i) for i in range(requests)]
            outcome = noise.stop() if noise else {}
            q = statistics.quantiles(spent, n=100, method="inclusive")
            legs.append({"leg": name, "victim": {"p50": q[49], "p95": q[94]}, "noisy": outcome})
            progress(f"{name}: victim p50 {q[49]:.1f} ms p95 {q[94]:.1f} ms; noisy {outcome or '-'}")
            del counts
    return legs


class _Noise:
    """Background threads that make noise until stopped; counts what they were answered."""

    def __init__(self, workers: list[Callable[[threading.Event, dict], None]]) -> None:
        self.workers = workers
        self.stopping = threading.Event()
        self.counts: dict[str, int] = {}
        self.threads: list[threading.Thread] = []

    def start(self) -> dict:
        self.threads = [threading.Thread(target=w, args=(self.stopping, self.counts), daemon=True)
                        for w in self.workers]
        for t in self.threads:
            t.start()
        return self.counts

    def stop(self) -> dict:
        """Stop making noise; a request still in flight (a batch takes minutes) is left to the
        server's shutdown and counted as such."""
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=5)
        still = sum(t.is_alive() for t in self.threads)
        return {**self.counts, **({"in flight at the end": still} if still else {})}


def _count(counts: dict, response: httpx2.Response) -> float:
    """Tally an answer; the seconds to wait before the next request (Retry-After on a 429)."""
    key = str(response.status_code)
    counts[key] = counts.get(key, 0) + 1
    if response.status_code == 429:
        return float(response.headers.get("retry-after") or 1)
    return 0.0


def _flood(url: str, token: str, probes: list[str], threads: int) -> _Noise:
    def rest(stop: threading.Event, counts: dict) -> None:
        with httpx2.Client(base_url=url, timeout=120, headers=bearer(token)) as c:
            i = 0
            while not stop.is_set():
                i += 1
                stop.wait(_count(counts, c.post("/v1/search", json={"query": probes[i % len(probes)], "k": 10})))

    def mcp(stop: threading.Event, counts: dict) -> None:
        with httpx2.Client(base_url=url, timeout=120, headers={**bearer(token), **MCP_HEADERS}) as c:
            i = 0
            while not stop.is_set():
                i += 1
                body = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                        "params": {"name": "search", "arguments": {"query": probes[i % len(probes)], "k": 10}}}
                stop.wait(_count(counts, c.post("/mcp", json=body)))

    return _Noise([rest if t % 2 == 0 else mcp for t in range(threads)])


def _batches(url: str, token: str) -> _Noise:
    rng = random.Random(7)
    words = [w for texts in corpus(400).values() for t in texts for w in t.split()]

    def big_text() -> str:
        out, size = [], 0
        while size < MAX_CONTENT_CHARS - 20:
            w = rng.choice(words)
            out.append(w)
            size += len(w) + 1
        return " ".join(out)[:MAX_CONTENT_CHARS]

    batch = [{"content": big_text()} for _ in range(MAX_BATCH)]

    def writer(stop: threading.Event, counts: dict) -> None:
        with httpx2.Client(base_url=url, timeout=600, headers=bearer(token)) as c:
            while not stop.is_set():
                for item in batch:  # new text each time: an unchanged batch would be skipped as duplicates
                    item["content"] = item["content"][1:] + item["content"][0]
                stop.wait(_count(counts, c.post("/v1/memories:batch", json={"memories": batch})))

    return _Noise([writer])


METHOD = """A synthetic org's memories (`halomem/bench/synthetic.py`) in one ephemeral embedded server, `VACUUM
ANALYZE` after the load, one `halomem serve` process with its default limits and the store's default
embedder. The victim (a read token of `globex/rnd`) sends sequential `POST /v1/search` (k = 10) over
keep-alive httpx2; each leg times the same number of its searches. Flood: a read-write token of
`acme/eng` searches from N threads, half REST and half MCP `tools/call search`, each retrying a 429
after its Retry-After. Batch: the same principal sends `POST /v1/memories:batch` of 100 memories of
64 KiB, one after another, for the whole leg. Client and server share the machine's 2 cores."""


def markdown(data: dict) -> str:
    rows = [[leg["leg"], leg["victim"]["p50"], leg["victim"]["p95"], leg["p50_ratio"], leg["p95_ratio"],
             ", ".join(f"{k}: {v}" for k, v in sorted(leg["noisy"].items())) or "-"] for leg in data["legs"]]
    args = " ".join(data["server_args"]) or "(defaults)"
    return (f"# Serving under a noisy neighbour ({data['memories']} memories, {data['embedder']})\n\n{METHOD}\n\n"
            f"Flood threads: {data['flood_threads']}; victim searches per leg: {data['requests_per_leg']};"
            f" server options: {args}.\n\n"
            + report.markdown_table(["leg", "victim p50 ms", "victim p95 ms", "p50 / idle", "p95 / idle",
                                     "noisy principal's answers"], rows))
