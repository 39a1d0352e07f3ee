"""Which namespaces have their own indexes, remembered across readers for a short while.

Asking PostgreSQL's catalog on every plan() cost a round trip (about 1 ms against a 15 ms floor).
The answer only decides how a probe is split into index groups (reader._index_groups), never which
rows a caller may read, so a stale answer costs speed, not correctness: a namespace indexed or
dropped by another process is noticed within TTL_SECONDS, and this process's own create and drop
(Kernel.index_namespace, drop_namespace_index) forget at once.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Sequence

from sqlalchemy.engine import Connection

from ..db.migrations import valid_indexes
from ..db.schema import namespace_index_names

TTL_SECONDS = 30.0


class NamespaceIndexCatalog:
    """Thread-safe: one per MemoryIndex, shared by the readers of every request."""

    def __init__(self, ttl: float = TTL_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._known: dict[str, tuple[bool, float]] = {}  # namespace -> (has its own indexes, when checked)
        self._lock = threading.Lock()

    def own_indexes(self, conn: Connection, namespaces: Sequence[str]) -> dict[str, bool]:
        """namespace -> whether it has its own valid HNSW and GIN indexes."""
        now = self._clock()
        with self._lock:
            out = {ns: has for ns in namespaces
                   for has, checked in [self._known.get(ns, (False, -float("inf")))] if now - checked < self._ttl}
        unknown = [ns for ns in namespaces if ns not in out]
        if unknown:
            names = {ns: namespace_index_names(ns) for ns in unknown}
            found = valid_indexes(conn, [n for pair in names.values() for n in pair])
            checked = {ns: set(pair) <= found for ns, pair in names.items()}
            with self._lock:
                self._known.update({ns: (has, now) for ns, has in checked.items()})
            out.update(checked)
        return out

    def forget(self) -> None:
        with self._lock:
            self._known.clear()
