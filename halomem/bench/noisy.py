"""bench serve --noisy: is one organisation's search slowed by another's flood?

One `halomem serve` (the store's default embedder, the server's default limits) and three legs, each
timing the same sequential searches of a *victim* principal (globex) over REST:

- idle: nothing else runs;
- flood: one principal of another organisation (acme) searches from N threads at once, half over
  REST and half over MCP (tools/call), as fast as the server answers (a 429 is retried after its
  Retry-After, as a well-behaved client would);
- batch: that principal sends maximal `remember_many` batches (100 memories of 64 KiB) one after
  another for the whole leg (with the default embedder one such batch embeds for minutes: the leg
  times the victim while it runs);
- children, other org: an admin of acme mints eight child tokens and each floods from its own thread
  (a lineage shares its root's share: minting does not multiply it);
- children, same org: the same from an admin of the victim's own organisation (globex/ops);
- admin reads: two admins of other organisations call the audit's status, the policy report over ten
  years and the audit listing back to back, over a trail of ``trail`` rows;
- streams: a read token tries to hold standing MCP streams (GET /mcp) from eight threads.

The report gives the victim's p50/p95 per leg, their ratio to idle, and what the noisy principals got
(answers, 429s). Goal (issues 38, 48): victim p50 <= 1.5x idle and p95 <= 2x in every noisy leg.
"""
from __future__ import annotations

import functools
import os
import random
import statistics
import tempfile
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


CHILDREN = 8  # child tokens a lineage's root mints for the children legs
DEFAULT_TRAIL = 60_000  # audit rows behind the admin-reads leg


def run_noisy(memories: int, requests: int, threads: int, out_dir: Path,
              progress: Callable[[str], None] = lambda m: None, server_args: tuple[str, ...] = (),
              trail: int = DEFAULT_TRAIL) -> dict:
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
            roots = {org: for_operator(kernel, ns).create_token(None, f"root-{org}", "read,write,admin").token
                     for org, ns in (("other", "acme"), ("same", "globex/ops"))}
            admins = [for_operator(kernel, ns).create_token(None, "auditor", "read,admin").token
                      for ns in ("acme", "initech")]
            _fill_trail(kernel, trail, ("acme/eng", "initech/ops"))
            progress(f"audit trail of {trail} rows")
        finally:
            kernel.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
        env.update(HALOMEM_DATABASE_URL=url, HALOMEM_HOME=tempfile.mkdtemp(prefix="halomem-bench-noisy-home-"))
        server = start_server(env, "--no-access-log", *server_args)
        try:
            probes = [text for ns, text in queries(max(requests, 200), seed=29)]
            tokens = {"noisy": noisy, "admins": admins, **{f"children-{org}": _mint(server.url, root, CHILDREN)
                                                           for org, root in roots.items()}}
            legs = _legs(server.url, victim, tokens, probes, requests, threads, progress)
        finally:
            server.stop()
    idle = legs[0]["victim"]
    for leg in legs:
        leg["p50_ratio"] = leg["victim"]["p50"] / idle["p50"]
        leg["p95_ratio"] = leg["victim"]["p95"] / idle["p95"]
    data = {"memories": memories, "embedder": embedder, "requests_per_leg": requests, "flood_threads": threads,
            "children": CHILDREN, "trail": trail, "server_args": list(server_args), "legs": legs}
    md = markdown(data)
    report.write(out_dir, "serve-noisy", data, md)
    return {**data, "markdown": md}


def _fill_trail(kernel, rows: int, namespaces: tuple[str, ...]) -> None:  # noqa: ANN001
    """``rows`` search rows of other organisations in the audit trail, chained as appends chain them
    (audit.log.row_hash), inserted in batches: what a busy year leaves behind."""
    from datetime import datetime, timedelta, timezone

    from ..audit.log import ROW_FORMAT, row_hash
    from ..db.schema import audit_log

    with kernel.engine.begin() as conn:
        last = conn.execute(audit_log.select().order_by(audit_log.c.seq.desc()).limit(1)).first()
        seq, prev = (last.seq, last.hash) if last else (0, "0" * 64)
        at = datetime.now(timezone.utc) - timedelta(days=300)
        batch = []
        for i in range(rows):
            seq, at = seq + 1, at + timedelta(seconds=300 * 86400 / max(rows, 1))
            ns = namespaces[i % len(namespaces)]
            record = {"outcome": "ok", "returned": 3, "tokens": 40, "driver": "fusion", "driver_version": "bench",
                      "ms": 10.0 + i % 7, "requested": "fusion", "chosen_by": "policy", "k": 10, "budget": 2000,
                      "embedder": "bench", "via": "rest", "query": "0" * 64,
                      "refs": [[1, "L2", f"m_bench{i % 97}", 0.5]]}
            digest = row_hash(prev, seq, at, ns, "search", record, f"bench{i}", None)
            batch.append({"seq": seq, "at": at, "actor_ns": ns, "action": "search", "fields": record,
                          "row_format": ROW_FORMAT, "request_id": f"bench{i}", "prev_hash": prev, "hash": digest})
            prev = digest
            if len(batch) == 5000:
                conn.execute(audit_log.insert(), batch)
                batch = []
        if batch:
            conn.execute(audit_log.insert(), batch)


def _mint(url: str, root: str, n: int) -> list[str]:
    """``n`` child tokens minted by ``root`` over REST (what a principal wanting more share would do)."""
    with httpx2.Client(base_url=url, timeout=60, headers=bearer(root)) as c:
        namespace = c.get("/v1/whoami").json()["namespace"]
        made = [c.post(f"/v1/tokens/{namespace}", json={"name": f"child-{i}", "scopes": ["read"]}) for i in range(n)]
    return [m.raise_for_status().json()["token"] for m in made]


def _legs(url: str, victim: str, tokens: dict, probes: list[str], requests: int, threads: int,
          progress: Callable[[str], None]) -> list[dict]:
    with httpx2.Client(base_url=url, timeout=120, headers=bearer(victim)) as client:
        def victim_search(i: int) -> float:
            started = time.perf_counter()
            client.post("/v1/search", json={"query": probes[i % len(probes)], "k": 10}).raise_for_status()
            return (time.perf_counter() - started) * 1000

        for i in range(20):  # warm the server's paths and the database's caches
            victim_search(i)
        legs = []
        for name, noise in (("idle", None), ("flood", _flood(url, [tokens["noisy"]], probes, threads)),
                            ("batch", _batches(url, tokens["noisy"])),
                            ("children, other org", _flood(url, tokens["children-other"], probes, CHILDREN)),
                            ("children, same org", _flood(url, tokens["children-same"], probes, CHILDREN)),
                            ("admin reads", _admin_reads(url, tokens["admins"])),
                            ("streams", _streams(url, tokens["children-other"][0], CHILDREN))):
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


def _flood(url: str, tokens: list[str], probes: list[str], threads: int) -> _Noise:
    """``threads`` flooding searchers, half REST and half MCP; thread t uses token t (cycling)."""
    def rest(stop: threading.Event, counts: dict, token: str) -> None:
        with httpx2.Client(base_url=url, timeout=120, headers=bearer(token)) as c:
            i = 0
            while not stop.is_set():
                i += 1
                stop.wait(_count(counts, c.post("/v1/search", json={"query": probes[i % len(probes)], "k": 10})))

    def mcp(stop: threading.Event, counts: dict, token: str) -> None:
        with httpx2.Client(base_url=url, timeout=120, headers={**bearer(token), **MCP_HEADERS}) as c:
            i = 0
            while not stop.is_set():
                i += 1
                body = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                        "params": {"name": "search", "arguments": {"query": probes[i % len(probes)], "k": 10}}}
                stop.wait(_count(counts, c.post("/mcp", json=body)))

    return _Noise([functools.partial(rest if t % 2 == 0 else mcp, token=tokens[t % len(tokens)])
                   for t in range(threads)])


def _admin_reads(url: str, admins: list[str]) -> _Noise:
    """Admins reading what costs the most to compute: the chain's status, ten years of policy
    report, the longest audit listing."""
    def reader(stop: threading.Event, counts: dict, token: str) -> None:
        paths = ("/v1/audit/status", "/v1/policy/report?days=3660", "/v1/audit?n=1000")
        with httpx2.Client(base_url=url, timeout=120, headers=bearer(token)) as c:
            i = 0
            while not stop.is_set():
                i += 1
                stop.wait(_count(counts, c.get(paths[i % len(paths)])))

    return _Noise([functools.partial(reader, token=t) for t in admins])


def _streams(url: str, token: str, threads: int) -> _Noise:
    """A read token asking for standing MCP streams (GET /mcp) as fast as it is answered."""
    def opener(stop: threading.Event, counts: dict) -> None:
        with httpx2.Client(base_url=url, timeout=120, headers={**bearer(token), "Accept": "text/event-stream"}) as c:
            while not stop.is_set():
                stop.wait(_count(counts, c.get("/mcp")))

    return _Noise([opener] * threads)


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
64 KiB, one after another, for the whole leg. Children: a root token (admin of `acme`, or of
`globex/ops`: the victim's organisation) mints eight read tokens over REST before the legs, and each
child searches from its own thread. Admin reads: admins of `acme` and `initech` over an audit trail
of synthetic search rows (chained as appends chain them) call `GET /v1/audit/status`,
`/v1/policy/report?days=3660` and `/v1/audit?n=1000` in turn. Streams: eight threads of one read
token ask for `GET /mcp`. Client and server share the machine's 2 cores."""


def markdown(data: dict) -> str:
    rows = [[leg["leg"], leg["victim"]["p50"], leg["victim"]["p95"], leg["p50_ratio"], leg["p95_ratio"],
             ", ".join(f"{k}: {v}" for k, v in sorted(leg["noisy"].items())) or "-"] for leg in data["legs"]]
    args = " ".join(data["server_args"]) or "(defaults)"
    return (f"# Serving under a noisy neighbour ({data['memories']} memories, {data['embedder']})\n\n{METHOD}\n\n"
            f"Flood threads: {data['flood_threads']}; child tokens per root: {data.get('children', '-')}; audit"
            f" trail: {data.get('trail', '-')} rows; victim searches per leg: {data['requests_per_leg']};"
            f" server options: {args}.\n\n"
            + report.markdown_table(["leg", "victim p50 ms", "victim p95 ms", "p50 / idle", "p95 / idle",
                                     "noisy principal's answers"], rows))
