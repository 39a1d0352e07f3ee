"""The audit trail: one row per write, erase, search and fallback.

Each row's hash covers the previous row's hash and its own fields, so an UPDATE or DELETE done
behind the kernel's back breaks the chain at that row, and `verify` names it. Appends are
serialized with a transaction-scoped advisory lock and run in the caller's transaction, so a write
and its audit row commit together or not at all.

Who acted: every row names the namespace, and, when an authenticated principal (an agent's token)
made the request, that principal's id. The operations layer sets it with ``acting_as`` around each
request, so no write path has to thread it through.
"""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Iterator, Sequence

if TYPE_CHECKING:
    from .heads import Head

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import audit_log
from ..index.acl import in_subtree

AUDIT_LOCK = 0x6A10_0002
STORE_NS = "-"  # the namespace of rows no caller namespace owns: store-wide commands, callers with no token
GENESIS = "0" * 64
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ACTOR: ContextVar[str | None] = ContextVar("halomem_audit_principal", default=None)


@contextmanager
def acting_as(principal_id: str | None) -> Iterator[None]:
    """Audit rows appended inside this block name ``principal_id`` (None: the local operator)."""
    token = _ACTOR.set(principal_id)
    try:
        yield
    finally:
        _ACTOR.reset(token)


@dataclass
class Trace:
    """One request as the audit trail counts it: its id, and how many rows it has appended so far
    (the request pipeline writes its own row only when the operation wrote none)."""

    request_id: str
    rows: int = 0

    @property
    def transport(self) -> str:
        """What carried the request (search rows name it: ``via=``); the pipeline's requests know."""
        return "local"


_TRACE: ContextVar[Trace | None] = ContextVar("halomem_audit_trace", default=None)


@contextmanager
def tracing(trace: Trace) -> Iterator[Trace]:
    """Count the rows appended for ``trace.request_id`` inside this block (threads started with
    a copy of this context, as thread pools do, count into the same trace)."""
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


def current_trace() -> Trace | None:
    """The request being traced in this context, if any."""
    return _TRACE.get()


@dataclass(frozen=True)
class AuditRow:
    seq: int
    at: datetime
    actor_ns: str
    action: str
    detail: str
    request_id: str
    prev_hash: str
    hash: str
    principal: str | None = None


def fields(detail: str) -> dict[str, str]:
    """A row's detail as its ``key=value`` fields (the first word, the action's outcome, aside):
    one reading of the format for who-saw, replay and the tests. A value written as a JSON string
    (``driver_warnings="..."``) is read whole, so words inside it are never taken for fields."""
    out: dict[str, str] = {}
    decoder = json.JSONDecoder()
    at = 0
    while at < len(detail):
        end = detail.find(" ", at)
        end = len(detail) if end < 0 else end
        key, eq, value = detail[at:end].partition("=")
        if eq and value.startswith('"'):
            start = at + len(key) + 1
            try:
                text, stop = decoder.raw_decode(detail, start)
                out[key], end = str(text), stop
            except ValueError:
                out[key] = value
        elif eq:
            out[key] = value
        at = end + 1
    return out


def row_hash(prev_hash: str, seq: int, at: datetime, actor_ns: str, action: str, detail: str,
             request_id: str, principal: str | None = None) -> str:
    micros = (at - _EPOCH) // timedelta(microseconds=1)
    fields: list[object] = [prev_hash, seq, micros, actor_ns, action, detail, request_id]
    if principal is not None:  # rows from before principals existed hash as they always did
        fields.append(principal)
    payload = json.dumps(fields, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def append(conn: Connection, actor_ns: str, action: str, detail: str, request_id: str) -> int:
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": AUDIT_LOCK})
    last = conn.execute(sa.select(audit_log.c.seq, audit_log.c.hash)
                        .order_by(audit_log.c.seq.desc()).limit(1)).first()
    seq, prev = (last.seq + 1, last.hash) if last else (1, GENESIS)
    at = datetime.now(timezone.utc)
    principal = _ACTOR.get()
    digest = row_hash(prev, seq, at, actor_ns, action, detail, request_id, principal)
    conn.execute(audit_log.insert().values(seq=seq, at=at, actor_ns=actor_ns, action=action, detail=detail,
                                           request_id=request_id, prev_hash=prev, hash=digest,
                                           principal=principal))
    trace = _TRACE.get()
    if trace is not None and trace.request_id == request_id:
        trace.rows += 1
    return seq


def tail(conn: Connection, n: int = 20, action: str | None = None, subtree: str | None = None) -> list[AuditRow]:
    """The newest ``n`` rows, oldest first; ``subtree`` keeps rows acted in that namespace or below."""
    stmt = sa.select(audit_log).order_by(audit_log.c.seq.desc()).limit(n)
    if action:
        stmt = stmt.where(audit_log.c.action == action)
    if subtree is not None:
        stmt = stmt.where(in_subtree(audit_log.c.actor_ns, subtree))
    return [AuditRow(**r._mapping) for r in reversed(conn.execute(stmt).all())]


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    rows: int
    first_bad_seq: int | None = None
    reason: str = ""
    head_seq: int | None = None  # the newest row's seq and hash (check them later with --expect-head)
    head_hash: str | None = None


def head(conn: Connection) -> "Head | None":
    from .heads import Head

    last = conn.execute(sa.select(audit_log.c.seq, audit_log.c.hash).order_by(audit_log.c.seq.desc()).limit(1)).first()
    return Head(last.seq, last.hash) if last else None


def verify(conn: Connection, batch: int = 5000, expected: "Sequence[Head]" = ()) -> VerifyResult:
    """Recompute the chain; then each ``expected`` head (kept outside the database) must still be in it."""
    chained = _verify_chain(conn, batch)
    if not chained.ok:
        return chained
    for want in expected:
        got = conn.execute(sa.select(audit_log.c.hash).where(audit_log.c.seq == want.seq)).scalar()
        if got is None:
            return VerifyResult(False, chained.rows, want.seq, f"row {want.seq}, a recorded head, is gone (the newest"
                                f" rows were deleted)", chained.head_seq, chained.head_hash)
        if got != want.hash:
            return VerifyResult(False, chained.rows, want.seq, f"row {want.seq} differs from its recorded head (the"
                                f" chain was rewritten)", chained.head_seq, chained.head_hash)
    return chained


def _verify_chain(conn: Connection, batch: int) -> VerifyResult:
    prev, expected_seq, count = GENESIS, 1, 0
    after = 0
    while True:
        rows = conn.execute(sa.select(audit_log).where(audit_log.c.seq > after)
                            .order_by(audit_log.c.seq).limit(batch)).all()
        if not rows:
            return VerifyResult(True, count, head_seq=expected_seq - 1 if count else None,
                                head_hash=prev if count else None)
        for r in rows:
            if r.seq != expected_seq:
                return VerifyResult(False, count, expected_seq, f"row {expected_seq} is missing (next is {r.seq})")
            if r.prev_hash != prev:
                return VerifyResult(False, count, r.seq, f"row {r.seq} does not link to row {r.seq - 1}")
            if row_hash(prev, r.seq, r.at, r.actor_ns, r.action, r.detail, r.request_id, r.principal) != r.hash:
                return VerifyResult(False, count, r.seq, f"row {r.seq} was altered (hash mismatch)")
            prev, expected_seq, count = r.hash, r.seq + 1, count + 1
        after = rows[-1].seq
