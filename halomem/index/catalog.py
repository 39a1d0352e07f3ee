"""What a probe's plan needs to know of namespaces, remembered across readers for a short while:
which have their own indexes, and how many live rows each holds.

Asking PostgreSQL on every plan() cost a round trip (about 1 ms against a 15 ms floor). The answers
only decide how a probe is split into index groups and whether a group is walked through HNSW or
scanned exactly (reader._index_groups, _exact_groups), never which rows a caller may read, so a
stale answer costs speed, not correctness: a namespace indexed, dropped or grown by another process
is noticed within TTL_SECONDS, and this process's own create and drop (Kernel.index_namespace,
drop_namespace_index) forget at once.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.migrations import with_own_indexes
from ..db.schema import lexicon

TTL_SECONDS = 30.0


class NamespaceIndexCatalog:
    """Thread-safe: one per MemoryIndex, shared by the readers of every request."""

    def __init__(self, ttl: float = TTL_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._known: dict[str, tuple[bool, float]] = {}  # namespace -> (has its own indexes, when checked)
        self._rows: tuple[dict[str, int], int, float] | None = None  # (namespace -> live rows, all, when)
        self._lock = threading.Lock()

    def own_indexes(self, conn: Connection, namespaces: Sequence[str]) -> dict[str, bool]:
        """namespace -> whether it has its own valid HNSW and GIN indexes."""
        now = self._clock()
        out: dict[str, bool] = {}
        with self._lock:
            for ns in namespaces:
                if ns in self._known and now - self._known[ns][1] < self._ttl:
                    out[ns] = self._known[ns][0]
        unknown = [ns for ns in namespaces if ns not in out]
        if unknown:
            having = with_own_indexes(conn, unknown)
            checked = {ns: ns in having for ns in unknown}
            with self._lock:
                self._known.update({ns: (has, now) for ns, has in checked.items()})
            out.update(checked)
        return out

    def live_rows(self, conn: Connection) -> tuple[dict[str, int], int]:
        """(namespace -> its live rows, all namespaces' live rows), as the lexicon counts them (its
        '' row per namespace); the total is summed once per count, not per probe."""
        now = self._clock()
        with self._lock:
            if self._rows is not None and now - self._rows[2] < self._ttl:
                return self._rows[0], self._rows[1]
        counted = {ns: int(n) for ns, n in conn.execute(
            sa.select(lexicon.c.namespace, lexicon.c.docs).where(lexicon.c.lexeme == ""))}
        total = sum(counted.values())
        with self._lock:
            self._rows = (counted, total, now)
        return counted, total

    def forget(self) -> None:
        with self._lock:
            self._known.clear()
            self._rows = None
