"""bench peers' server leg: the same LoCoMo searches over HTTP at N concurrent callers, halomem's server
against LangGraph's PostgresStore behind the same kind of server (issue 52: "the audit chain must not
serialise readers").

- halomem: a real `halomem serve` process on the store (its defaults but the request rate limit:
  tokens one per conversation namespace, fair shares, the pipeline, the audit rows), and a second
  one whose shares admit all the callers at once (``--in-flight N --org-in-flight N``: by default a
  principal has one request in flight and an organisation two, and the ten conversations are one
  organisation): what the server does when nobody waits for a share;
- the peer: bench.peer_server in a process of its own (FastAPI on uvicorn, a pool of halomem's size),
  the store's embedder the same;
- both on the benchmark's embedded PostgreSQL, the same questions in the same order, each with the
  embedding threads halomem serve uses; the two legs alternate (halomem, peer, halomem, peer), so the
  machine's drift falls on both.

Throughput is searches answered per second of the leg; latency is what a caller waited, a 429's
Retry-After included (halomem's fair shares queue or refuse a principal or an organisation over its
share: the ten conversations are one organisation here; the peer has no such rule).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Sequence

import httpx2

from ..ports import free_port
from .peers import LangGraphSide
from .serve import drive
from .serving import ServerProcess, bearer, start_process, start_server

WARM = 20
RETRY_AFTER_MAX_S = 1.0
WIDE = "halomem, shares as wide as the callers"


def run_load(kernel: Any, url: str, questions: Sequence[Any], callers: int, rounds: int,
             say: Callable[[str], None]) -> dict[str, Any]:
    """Each system's server answering ``questions`` with ``callers`` threads, ``rounds`` legs each."""
    from ..embed.onnx import THREADS_VARIABLE, serving_threads
    from ..ops import for_operator

    env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
    env.update({"HALOMEM_DATABASE_URL": url, "HALOMEM_EMBEDDER": kernel.embedder.name,
                THREADS_VARIABLE: str(serving_threads())})  # the peer's server too, as halomem serve sets it
    tokens = {ns: for_operator(kernel, ns).create_token(None, "bench peers", "read").token
              for ns in sorted({q.namespace for q in questions})}
    servers: list[ServerProcess] = []
    try:
        servers.append(start_server(env, "--rate-limit", "0", "--no-access-log"))
        servers.append(start_server(env, "--rate-limit", "0", "--no-access-log", "--in-flight", str(callers),
                                    "--org-in-flight", str(callers)))
        port = free_port()
        servers.append(start_process([sys.executable, "-m", "halomem.bench.peer_server", "--url", url, "--port",
                                      str(port), "--embedder", kernel.embedder.name], port, env, name="peer server"))
        systems = {"halomem": _Caller(servers[0].url, callers, _halomem_search(tokens)),
                   WIDE: _Caller(servers[1].url, callers, _halomem_search(tokens)),
                   LangGraphSide.name: _Caller(servers[2].url, callers, _peer_search)}
        legs: dict[str, list[dict[str, float]]] = {name: [] for name in systems}
        for caller in systems.values():
            drive(min(callers, 2), WARM, lambda w, i: caller.search(w, questions[i % len(questions)]))
        for r in range(rounds):
            for name, caller in systems.items():
                caller.refused = 0
                measured = drive(callers, len(questions), lambda w, i: caller.search(w, questions[i]))
                legs[name].append({**measured, "refused_then_retried": caller.refused})
                say(f"{callers} callers over HTTP, {name} (round {r + 1}): {measured['throughput_rps']:.1f}"
                    f" searches/s, p95 {measured['p95']:.0f} ms")
        for caller in systems.values():
            caller.close()
    finally:
        for server in servers:
            server.stop()
    return {"callers": callers, "searches_per_leg": len(questions), "rounds": rounds,
            "systems": {name: _combined(rows) for name, rows in legs.items()}}


def _combined(rows: list[dict[str, float]]) -> dict[str, float]:
    """The legs of one system: throughput and p95 as the median leg's, 429s summed."""
    middle = sorted(rows, key=lambda r: r["throughput_rps"])[len(rows) // 2]
    return {"throughput_rps": round(middle["throughput_rps"], 1), "p50": round(middle["p50"], 1),
            "p95": round(middle["p95"], 1), "refused_then_retried": sum(int(r["refused_then_retried"]) for r in rows)}


class _Caller:
    """One HTTP client per caller thread; ``search(w, question)`` retries a 429 after its Retry-After."""

    def __init__(self, base_url: str, callers: int, send: Callable[[httpx2.Client, Any], httpx2.Response]) -> None:
        self.clients = [httpx2.Client(base_url=base_url, timeout=60) for _ in range(callers)]
        self.send, self.refused, self._lock = send, 0, threading.Lock()

    def search(self, w: int, question: Any) -> None:
        while True:
            answer = self.send(self.clients[w], question)
            if answer.status_code != 429:
                break
            with self._lock:
                self.refused += 1
            time.sleep(min(float(answer.headers.get("retry-after") or 0.05), RETRY_AFTER_MAX_S))
        answer.raise_for_status()

    def close(self) -> None:
        for client in self.clients:
            client.close()


def _halomem_search(tokens: dict[str, str]) -> Callable[[httpx2.Client, Any], httpx2.Response]:
    def send(client: httpx2.Client, q: Any) -> httpx2.Response:
        return client.post("/v1/search", json={"query": q.text, "k": 10}, headers=bearer(tokens[q.namespace]))
    return send


def _peer_search(client: httpx2.Client, q: Any) -> httpx2.Response:
    return client.post("/search", json={"namespace": q.namespace, "query": q.text, "limit": 10})
