"""The kernel side of isolation: ``IsolatedDriver`` runs a cartridge's plan() in reused workers.

A worker is a fresh interpreter started with two pipes, a scrubbed environment and nothing else
open; it confines itself before loading the cartridge (``confine``). During plan() the kernel
answers the proxy view's calls from the real ScopedView of that call (which records the refs it
admits, as in-process). Any failure of the cartridge (an exception, a crash, a broken frame, the
deadline) ends that worker and raises DriverUnavailableError, so the kernel serves baseline and
audits the fallback: an untrusted cartridge can degrade a search, never break it.
"""
from __future__ import annotations

import logging
import math
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..drivers import DriverUnavailableError
from ..types import Capabilities, RetrieverQuery, ScoredRef
from . import wire
from .cartridge import Cartridge

log = logging.getLogger("halomem")

DEFAULT_DEADLINE_S = 5.0
DEFAULT_MEMORY_BYTES = 1 << 30
DEFAULT_CPU_SECONDS = 3600  # a reused worker's lifetime budget; each call also has the deadline
START_DEADLINE_S = 30.0
MAX_RESULTS = 10_000
MAX_EMBED_TEXTS = 1_000
MAX_TEXT_CHARS = 100_000
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TZ")


def worker_env() -> dict[str, str]:
    """Only what an interpreter needs: never HALOMEM_*, database URLs, PG* or tokens."""
    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    env.update(HOME="/nonexistent", PYTHONDONTWRITEBYTECODE="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    return env


@dataclass(frozen=True)
class Limits:
    deadline_s: float = DEFAULT_DEADLINE_S
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    cpu_seconds: int = DEFAULT_CPU_SECONDS


class Worker:
    """One confined worker process and its two pipe ends."""

    def __init__(self, cartridge: Cartridge, limits: Limits) -> None:
        child_r, parent_w = os.pipe()
        parent_r, child_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-m", "halomem.sandbox.worker", str(child_r), str(child_w)],
                pass_fds=(child_r, child_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=worker_env(), close_fds=True, start_new_session=True, cwd="/")
        finally:
            os.close(child_r)
            os.close(child_w)
        self.rfd, self.wfd = parent_r, parent_w
        for fd in (parent_r, parent_w):
            os.set_inheritable(fd, False)
            wire.widen_pipe(fd)
        self.alive = True
        try:
            wire.send(self.wfd, {"cartridge": cartridge.spec(), "list_paths": list(cartridge.sys_path),
                                 "read_paths": list(cartridge.read_paths),
                                 "net_ports": list(cartridge.net_ports), "memory_bytes": limits.memory_bytes,
                                 "cpu_seconds": limits.cpu_seconds})
            hello = wire.recv(self.rfd, time.monotonic() + START_DEADLINE_S)
        except wire.WireError as exc:
            self.kill()
            raise DriverUnavailableError(f"cartridge worker did not start: {exc}") from None
        if not isinstance(hello, dict) or "ready" not in hello:
            self.kill()
            reason = hello.get("failed") if isinstance(hello, dict) else "bad hello"
            raise DriverUnavailableError(f"cartridge did not load in its sandbox: {reason}")
        self.confinement = str(hello.get("confinement", ""))[:300]
        self.reported_name = str(hello.get("ready", ""))[:100]
        self.capabilities = Capabilities(graph=bool(hello.get("graph")), streaming=bool(hello.get("streaming")))

    def kill(self) -> None:
        self.alive = False
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self.rfd, self.wfd):
            try:
                os.close(fd)
            except OSError:
                pass


def _answer(view: Any, name: str, args: list) -> Any:
    """Run one proxy-view call against the real view, with arguments checked as the kernel's own."""
    if name == "candidates" and len(args) == 1 and _is_int(args[0]):
        return wire.candidates_out(view.candidates(args[0]))
    if name == "lexical_candidates" and len(args) == 2 and isinstance(args[0], str) and _is_int(args[1]):
        if not callable(getattr(view, "lexical_candidates", None)):
            raise AttributeError("this view has no lexical_candidates")
        return wire.candidates_out(view.lexical_candidates(args[0][:MAX_TEXT_CHARS], args[1]))
    if name == "corpus_stats" and len(args) == 1 and isinstance(args[0], list) and len(args[0]) <= MAX_EMBED_TEXTS \
            and all(isinstance(t, str) and len(t) <= MAX_TEXT_CHARS for t in args[0]):
        if not callable(getattr(view, "corpus_stats", None)):
            raise AttributeError("this view has no corpus_stats")
        return wire.corpus_stats_out(view.corpus_stats(args[0]))
    if name == "similarity_floor" and not args:
        if not callable(getattr(view, "similarity_floor", None)):
            raise AttributeError("this view has no similarity_floor")
        return float(view.similarity_floor())
    if name == "vector_search" and len(args) == 2 and _is_vector(args[0]) and _is_int(args[1]):
        return wire.vector_hits_out(view.vector_search(args[0], args[1]))
    if name == "embed" and len(args) == 1 and isinstance(args[0], list) and len(args[0]) <= MAX_EMBED_TEXTS \
            and all(isinstance(t, str) and len(t) <= MAX_TEXT_CHARS for t in args[0]):
        return [[float(x) for x in v] for v in view.embed(args[0])]
    if name == "concepts" and len(args) == 2 and isinstance(args[0], str) and _is_int(args[1]):
        return wire.scored_refs_out(view.concepts(args[0][:MAX_TEXT_CHARS], args[1]))
    if name == "entities" and not args:
        if not callable(getattr(view, "entities", None)):
            raise AttributeError("this view has no entities")
        return wire.entities_out(view.entities())
    if name == "entity_facts" and len(args) == 2 and isinstance(args[0], str) and args[1] in (1, 2):
        return wire.entity_facts_out(view.entity_facts(args[0][:MAX_TEXT_CHARS], args[1]))
    raise ValueError(f"no view call {name!r} with these arguments")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_vector(v: Any) -> bool:
    return isinstance(v, list) and 0 < len(v) <= 8192 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)


class IsolatedDriver:
    """A RetrieverDriver whose plan() runs in a pool of confined, reused workers."""

    def __init__(self, cartridge: Cartridge, limits: Limits | None = None, workers: int = 2) -> None:
        self.name = cartridge.name
        self.cartridge = cartridge
        self.version = cartridge.version
        self.limits = limits or Limits()
        self._idle: queue.LifoQueue[Worker] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(max(1, workers))
        self._capabilities: Capabilities | None = None
        self.confinement = ""
        self.reported_name = ""  # the name the cartridge gives itself, once a worker has loaded it

    def capabilities(self) -> Capabilities:
        if self._capabilities is None:
            self._release(self._acquire())
        return self._capabilities or Capabilities()

    def _acquire(self) -> Worker:
        self._slots.acquire()
        try:
            while True:
                try:
                    worker = self._idle.get_nowait()
                except queue.Empty:
                    worker = Worker(self.cartridge, self.limits)
                    self._capabilities, self.confinement = worker.capabilities, worker.confinement
                    self.reported_name = worker.reported_name
                    return worker
                if worker.alive and worker.proc.poll() is None:
                    return worker
                worker.kill()
        except BaseException:
            self._slots.release()
            raise

    def _release(self, worker: Worker) -> None:
        if worker.alive:
            self._idle.put(worker)
        self._slots.release()

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        worker = self._acquire()
        try:
            return self._plan(worker, q)
        except wire.WireError as exc:
            worker.kill()
            raise DriverUnavailableError(f"isolated driver {self.name!r}: {exc}") from None
        finally:
            self._release(worker)

    def _plan(self, worker: Worker, q: RetrieverQuery) -> list[ScoredRef]:
        deadline = time.monotonic() + self.limits.deadline_s
        wire.send(worker.wfd, {"query": q.query, "k": q.k, "budget": q.token_budget,
                               "namespace": q.view.namespace.path})
        while True:
            msg = wire.recv(worker.rfd, deadline)
            if not isinstance(msg, dict) or len(msg) != (2 if "call" in msg else 1):
                raise wire.WireError("malformed frame")
            if "call" in msg:
                try:
                    reply = {"ok": _answer(q.view, str(msg["call"]), msg.get("args") or [])}
                except Exception as exc:  # noqa: BLE001 - the cartridge learns its call was refused
                    reply = {"err": f"{type(exc).__name__}: {str(exc)[:200]}"}
                wire.send(worker.wfd, reply)
            elif "warn" in msg:
                log.warning("driver %r: %s", self.name, str(msg["warn"])[:500])
            elif "done" in msg:
                if not isinstance(msg["done"], list) or len(msg["done"]) > MAX_RESULTS:
                    raise wire.WireError("result is not a list of at most 10000 refs")
                return [wire.scored_ref_in(r) for r in msg["done"]]
            elif "unavailable" in msg:
                raise DriverUnavailableError(str(msg["unavailable"])[:300])
            elif "failed" in msg:
                raise DriverUnavailableError(f"cartridge raised {str(msg['failed'])[:300]}")
            else:
                raise wire.WireError("unknown frame")

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                return

