"""Read replicas with read-your-writes (HALOMEM_READ_DATABASE_URL: one or more hot standbys).

Reads (search, get, recent, history) go to a standby; writes to the primary. A caller that wrote
must read its write: the write's position in the primary's WAL (its LSN) travels with the caller,
remembered per principal by the server and handed to clients as a consistency token they may send
back. A read that carries one waits, at most ``wait`` seconds, for a standby to have replayed that
far, then reads the primary instead. A standby that does not answer is skipped for ``cooldown``
seconds: a lagging or dead replica costs time, never an error or a stale own write.
"""
from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

import sqlalchemy as sa

log = logging.getLogger("halomem")
T = TypeVar("T")

_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")
PRIMARY = "primary"


def parse_lsn(text: object) -> int | None:
    """A WAL position as PostgreSQL prints it (``16/B374D848``), or None if it is not one."""
    match = _LSN.match(text) if isinstance(text, str) else None
    return (int(match.group(1), 16) << 32) + int(match.group(2), 16) if match else None


def format_lsn(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


@dataclass
class Consistency:
    """One request's read-your-writes state: the WAL position its reads must see (the caller's last
    write, from the server's memory or the client's token) and the one its own write reached."""

    after: int | None = None
    wrote: int | None = None

    def token(self) -> str | None:
        latest = max(self.after or 0, self.wrote or 0)
        return format_lsn(latest) if latest else None


@dataclass
class Replica:
    name: str  # host:port, for audit rows and metrics
    engine: sa.Engine
    index: Any  # halomem.index.MemoryIndex over this standby
    down_until: float = 0.0

    def replayed(self) -> int:
        with self.engine.connect() as conn:
            value = conn.exec_driver_sql("SELECT pg_last_wal_replay_lsn()::text").scalar()
        return parse_lsn(value) or 0

    def lag_seconds(self) -> float | None:
        with self.engine.connect() as conn:
            lag = conn.exec_driver_sql("SELECT CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0"
                                       " ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END").scalar()
        return float(lag) if lag is not None else None


@dataclass
class ReadRouter:
    """Which database serves a read: a standby that has replayed the caller's last write, else
    (after at most ``wait`` seconds) the primary."""

    primary_engine: sa.Engine
    primary_index: Any
    replicas: list[Replica] = field(default_factory=list)
    wait: float = 0.05
    poll: float = 0.002
    cooldown: float = 5.0

    def __post_init__(self) -> None:
        self._turn = itertools.count()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self.replicas)

    def primary_lsn(self) -> int:
        """The primary's WAL insert position now: at or past every commit that returned before."""
        with self.primary_engine.connect() as conn:
            return parse_lsn(conn.exec_driver_sql("SELECT pg_current_wal_insert_lsn()::text").scalar()) or 0

    def choose(self, after: int | None) -> tuple[Any, str]:
        """(the index to read with, the database's name) for a read that must see ``after``."""
        if not self.replicas:
            return self.primary_index, PRIMARY
        start = next(self._turn)
        order = [self.replicas[(start + i) % len(self.replicas)] for i in range(len(self.replicas))]
        now = time.monotonic()
        for replica in order:
            if replica.down_until > now:
                continue
            try:
                if self._caught_up(replica, after):
                    return replica.index, replica.name
            except sa.exc.SQLAlchemyError as exc:
                replica.down_until = time.monotonic() + self.cooldown
                log.warning("read replica %s did not answer (%s): reads go elsewhere for %gs", replica.name,
                            type(exc).__name__, self.cooldown)
        return self.primary_index, PRIMARY

    def _caught_up(self, replica: Replica, after: int | None) -> bool:
        deadline = time.monotonic() + self.wait
        while True:
            replayed = replica.replayed()  # also the health check: one round trip
            if after is None or replayed >= after:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(self.poll)

    def read(self, after: int | None, read: Callable[[Any], T]) -> tuple[T, str]:
        """``read(index)`` on a database that has replayed ``after``, and that database's name. A
        replica that fails mid-read -- gone, or its query canceled by a conflict with recovery (a
        standby replaying cleanup a snapshot still needs) -- is set aside and the primary answers:
        a caller never gets an error, nor an older state, for the replica's sake."""
        index, database = self.choose(after)
        try:
            return read(index), database
        except sa.exc.OperationalError as exc:
            if database == PRIMARY:
                raise
            log.warning("read replica %s failed a read (%s): the primary answers; reads go elsewhere for %gs",
                        database, type(getattr(exc, "orig", exc)).__name__, self.cooldown)
            self.unavailable(database)
            return read(self.primary_index), PRIMARY

    def unavailable(self, name: str) -> None:
        """A read on ``name`` failed mid-way: skip it for a while."""
        for replica in self.replicas:
            if replica.name == name:
                replica.down_until = time.monotonic() + self.cooldown
