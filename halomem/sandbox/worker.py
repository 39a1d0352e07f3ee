"""A cartridge worker's main: confine, load the cartridge, serve plan() calls over the pipe.

Started by the kernel as a fresh interpreter (`python -I -B -m halomem.sandbox.worker R W`) with
a scrubbed environment, stdin/stdout/stderr on /dev/null and only two pipe ends open. The first
frame says what to load and how to confine; nothing of the cartridge runs before ``confine``.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Literal, Sequence

from ..types import (Candidate, Capabilities, CorpusStats, Entity, EntityFact, Namespace, RetrieverQuery, ScoredRef,
                     VectorHit)
from . import wire

MAX_WARNINGS = 20


class ViewError(Exception):
    """The kernel refused a view call (bad arguments); raised inside the cartridge's plan()."""


class ProxyScopedView:
    """The ScopedView a cartridge sees in a worker: each call is answered by the kernel."""

    def __init__(self, namespace: Namespace, rfd: int, wfd: int) -> None:
        self.namespace = namespace
        self._rfd, self._wfd = rfd, wfd

    def _call(self, name: str, *args: Any) -> Any:
        wire.send(self._wfd, {"call": name, "args": list(args)})
        reply = wire.recv(self._rfd)
        if "err" in reply:
            raise ViewError(reply["err"])
        return reply["ok"]

    def candidates(self, limit: int = 500) -> list[Candidate]:
        return [Candidate(*c) for c in self._call("candidates", int(limit))]

    def lexical_candidates(self, query: str, limit: int) -> list[Candidate]:
        return [Candidate(*c) for c in self._call("lexical_candidates", str(query), int(limit))]

    def corpus_stats(self, terms: Sequence[str]) -> CorpusStats:
        documents, average_length, frequency = self._call("corpus_stats", [str(t) for t in terms])
        return CorpusStats(documents, average_length, frequency)

    def similarity_floor(self) -> float:
        return float(self._call("similarity_floor"))

    def vector_search(self, embedding: Sequence[float], k: int) -> list[VectorHit]:
        return [VectorHit(*h) for h in self._call("vector_search", [float(x) for x in embedding], int(k))]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._call("embed", [str(t) for t in texts])

    def concepts(self, query: str, k: int) -> list[ScoredRef]:
        return [ScoredRef(*r) for r in self._call("concepts", str(query), int(k))]

    def entities(self) -> list[Entity]:
        return [Entity(name, tuple(aliases)) for name, aliases in self._call("entities")]

    def entity_facts(self, mention: str, hops: Literal[1, 2]) -> list[EntityFact]:
        return [EntityFact(*f) for f in self._call("entity_facts", str(mention), int(hops))]


class _ForwardWarnings(logging.Handler):
    """Warnings a cartridge logs reach the kernel (and the search's audit row), a few per call."""

    def __init__(self, wfd: int) -> None:
        super().__init__(level=logging.WARNING)
        self.wfd, self.sent = wfd, 0

    def emit(self, record: logging.LogRecord) -> None:
        if self.sent < MAX_WARNINGS:
            self.sent += 1
            wire.send(self.wfd, {"warn": record.getMessage()[:500]})


def serve(rfd: int, wfd: int) -> None:
    hello = wire.recv(rfd)
    from . import cartridge, confine

    try:
        summary = confine.confine(hello["read_paths"], hello["net_ports"], hello["memory_bytes"],
                                  hello["cpu_seconds"], list_paths=hello.get("list_paths", []))
        sys.path[:0] = [p for p in hello["cartridge"].get("sys_path", []) if isinstance(p, str)]
        driver = cartridge.load(hello["cartridge"])
        caps = driver.capabilities() if callable(getattr(driver, "capabilities", None)) else Capabilities()
        wire.send(wfd, {"ready": str(getattr(driver, "name", "?")), "confinement": summary,
                        "graph": bool(getattr(caps, "graph", False)),
                        "streaming": bool(getattr(caps, "streaming", False))})
    except Exception as exc:  # noqa: BLE001 - reported, then the worker ends
        wire.send(wfd, {"failed": f"{type(exc).__name__}: {str(exc)[:300]}"})
        return
    from ..drivers import DriverUnavailableError

    forward = _ForwardWarnings(wfd)
    logging.getLogger().addHandler(forward)
    while True:
        job = wire.recv(rfd)
        forward.sent = 0
        view = ProxyScopedView(Namespace(job["namespace"]), rfd, wfd)
        try:
            refs = driver.plan(RetrieverQuery(query=job["query"], view=view, token_budget=job["budget"], k=job["k"]))
            if not isinstance(refs, list) or not all(isinstance(r, ScoredRef) for r in refs):
                raise TypeError("plan() must return a list of ScoredRef")
            wire.send(wfd, {"done": wire.scored_refs_out(refs)})
        except DriverUnavailableError as exc:
            wire.send(wfd, {"unavailable": str(exc)[:300]})
        except wire.WireError:
            raise
        except BaseException as exc:  # noqa: BLE001 - MemoryError, RecursionError...: reported, worker goes on
            wire.send(wfd, {"failed": f"{type(exc).__name__}: {str(exc)[:300]}"})


def main(argv: list[str]) -> int:
    rfd, wfd = int(argv[1]), int(argv[2])
    try:
        serve(rfd, wfd)
    except wire.WireError:
        return 0  # the kernel went away or ended this worker
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
