"""A search's query embedded while the search reads its policy and the driver its lexical lane.

A transformer's query embedding (MiniLM: ~2.5 ms) and the statements a search runs before it needs
the vector (the caller's policies, the BM25 lane and its statistics: ~2 ms) wait on different
things: ONNX Runtime on the cores, the statements on the database. So the search starts the
embedding on a worker thread as it begins and the view waits for it only when the vector is asked
for. Only an embedder that costs something and leaves the reads room is worth the hop: a remote
service (it waits on the network), or a local transformer whose runs leave a core free (`halomem
serve` runs it on all cores but one). A transformer on every core (in process, by default) would
take the cores from the statements it overlaps: measured on 2 cores, 3 ms saved a search with
one thread and none with two. The others embed in the caller's thread when the vector is first
asked for (after the driver's lexical reads), as before.
"""
from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from threading import Lock

from .embedders import Embedder

WORKERS = 16  # as many as `halomem serve` runs requests at once (admission.DEFAULT_PER_SERVER)

_pool: ThreadPoolExecutor | None = None
_pool_lock = Lock()


def worth_a_worker(embedder: Embedder) -> bool:
    """A remote service, or a local transformer that leaves a core to the search's reads (hash and
    static embed in microseconds: the thread hop would cost more)."""
    kind = getattr(embedder, "kind", None)
    if kind == "openai":
        return True
    return kind == "onnx" and getattr(embedder, "threads", 1) < (os.cpu_count() or 1)


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="halomem-query-embed")
        return _pool


def _forget_workers() -> None:
    """A forked child has none of the parent's worker threads: the pool it inherited would queue its
    embeddings forever, so it makes its own."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


class EarlyQuery:
    """One query's embedding by ``embedder``, started now, waited for by ``vector``."""

    def __init__(self, embedder: Embedder, text: str) -> None:
        self.embedder, self.text = embedder, text
        self._vector: list[float] | None = None
        self._future: Future[list[list[float]]] | None = None
        if worth_a_worker(embedder):
            self._future = _workers().submit(embedder.embed, [text])

    def vector(self) -> list[float]:
        """The embedding, made once for every view that asks (the answer's and the shadow arm's);
        the embedder's own error if it failed: the kernel's, raised in the caller."""
        if self._vector is None:
            [self._vector] = self._future.result() if self._future is not None else self.embedder.embed([self.text])
        return self._vector

    def serves(self, embedder: Embedder) -> bool:
        """Whether this is ``embedder``'s (a reembed may have swapped the store's embedder since the
        search began: then the view embeds again with the new one)."""
        return embedder is self.embedder
