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
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

if TYPE_CHECKING:
    from .heads import Head

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import audit_log
from ..records import canonical, clean
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
    fields: dict[str, Any]  # the row's record, as data (the hash covers it: ROW_FORMAT)
    request_id: str
    prev_hash: str
    hash: str
    principal: str | None = None

    @property
    def outcome(self) -> str:
        return str(self.fields.get("outcome", ""))

    @property
    def detail(self) -> str:
        """The record as one line for people (``search ok returned=3 ...``): display only, never read back."""
        return render(self.action, self.fields)

    def to_dict(self) -> dict[str, Any]:
        """The one JSON shape of a row (results.AuditRowJSON)."""
        return {"seq": self.seq, "at": self.at.isoformat(), "actor_ns": self.actor_ns, "action": self.action,
                "outcome": self.outcome, "fields": self.fields, "detail": self.detail, "request_id": self.request_id,
                "prev_hash": self.prev_hash, "hash": self.hash, "principal": self.principal}


# Row formats: 1, a free-text ``detail`` (rows written before v13; their fields were read from the
# text once, by the migration, and the hash still covers the text); 2, ``fields`` as data, hashed in
# the canonical encoding below.
LEGACY_FORMAT, ROW_FORMAT = 1, 2
# how a row reads: what happened first, then what it touched and how; the rest by name
_SHOWN_FIRST = ("kind", "status", "id", "old", "new", "of", "ref", "verdict", "returned", "tokens", "driver",
                "driver_version", "ms", "dropped")


def render(action: str, record: dict[str, Any]) -> str:
    """One line for people: what happened, then each field. Text that could be taken for a field
    (spaces, ``=``, quotes) is shown as a JSON string; lists and objects as compact JSON."""
    head = [str(record.get("route") or action)]
    if "outcome" in record:
        head.append(str(record["outcome"]))
    parts = []
    first = {key: i for i, key in enumerate(_SHOWN_FIRST)}
    for key in sorted(record, key=lambda k: (first.get(k, len(first)), k)):
        value = record[key]
        if key in ("route", "outcome"):
            continue
        if isinstance(value, str):
            shown = value if value and not any(c.isspace() or c in '="\'' for c in value) else json.dumps(value)
        elif isinstance(value, (list, dict, bool)) or value is None:
            shown = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        else:
            shown = str(value)
        parts.append(f"{key}={shown}")
    return " ".join(head + parts)


def row_hash(prev_hash: str, seq: int, at: datetime, actor_ns: str, action: str, record: dict[str, Any] | str,
             request_id: str, principal: str | None = None, row_format: int = ROW_FORMAT) -> str:
    """A row's hash. Format 2 covers its record in the canonical encoding; format 1 (legacy rows)
    its detail text, as those rows were hashed when written."""
    micros = (at - _EPOCH) // timedelta(microseconds=1)
    if row_format == LEGACY_FORMAT:
        legacy: list[object] = [prev_hash, seq, micros, actor_ns, action, record, request_id]
        if principal is not None:  # rows from before principals existed hash as they always did
            legacy.append(principal)
        payload = json.dumps(legacy, ensure_ascii=False)
    else:
        payload = canonical([ROW_FORMAT, prev_hash, seq, micros, actor_ns, action, record, request_id, principal])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def append(conn: Connection, actor_ns: str, action: str, record: dict[str, Any], request_id: str, *,
           beside: "Beside | None" = None) -> int:
    """Append one row: ``record`` is its fields as data (``outcome`` first by convention: ``ok``,
    ``refused``, ``failed``...), never text to parse back. Two statements: the chain's lock, then
    the row, which reads the chain's head and makes its own hash (row_hash, in SQL) after the lock
    is held (each statement's snapshot is taken when it starts). ``beside``: rows of other tables
    written in the row's own statement (a search's refs: audit.seen)."""
    record = clean(dict(record))
    at = datetime.now(timezone.utc)
    principal = _ACTOR.get()
    micros = (at - _EPOCH) // timedelta(microseconds=1)
    after_head = canonical([micros, actor_ns, action, record, request_id, principal])
    conn.execute(_LOCK, {"k": AUDIT_LOCK})
    values = {"at": at, "actor_ns": actor_ns, "action": action, "fields": canonical(record), "request_id": request_id,
              "principal": principal, "format": ROW_FORMAT, "after_head": after_head[1:], "genesis": GENESIS}
    if beside is not None:
        values.update(beside.values)
    seq = conn.execute(_APPEND if beside is None else beside.statement, values).scalar_one()
    trace = _TRACE.get()
    if trace is not None and trace.request_id == request_id:
        trace.rows += 1
    return int(seq)


_LOCK = sa.text("SELECT pg_advisory_xact_lock(:k)")
# row_hash's format 2 in SQL: canonical([2, head hash, seq, micros, ...]) is '[2,"<head hash>",<seq>,'
# followed by the canonical list of the rest without its '[' (a hex digest and an integer encode as
# themselves); test_audit holds the two equal, on text far from ASCII too
_APPEND_SQL = (
    "INSERT INTO audit_log (seq, at, actor_ns, action, fields, request_id, prev_hash, hash, principal, row_format)"
    " SELECT head.seq + 1, :at, :actor_ns, :action, CAST(:fields AS jsonb), :request_id, head.hash,"
    " encode(sha256(convert_to('[' || :format || ',\"' || head.hash || '\",' || (head.seq + 1) || ','"
    " || :after_head, 'UTF8')), 'hex'), :principal, :format"
    " FROM (SELECT seq, hash FROM (SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1) AS newest"
    " UNION ALL SELECT 0, :genesis ORDER BY seq DESC LIMIT 1) AS head RETURNING seq")
_AT = sa.bindparam("at", type_=sa.DateTime(timezone=True))
_APPEND = sa.text(_APPEND_SQL).bindparams(_AT)


@dataclass(frozen=True)
class Beside:
    """Rows of other tables written in an append's own statement: ``statement`` made once by
    beside_statement, ``values`` its own parameters."""

    statement: sa.TextClause
    values: dict[str, Any]


def beside_statement(then: str) -> sa.TextClause:
    """The append followed, in one statement, by ``then``: more data-modifying CTEs and a final
    statement that read the new row's seq from ``appended`` and return it."""
    return sa.text(f"WITH appended AS ({_APPEND_SQL}){then}").bindparams(_AT)


_ROW = [audit_log.c[name] for name in ("seq", "at", "actor_ns", "action", "fields", "request_id", "prev_hash",
                                       "hash", "principal")]


def tail(conn: Connection, n: int = 20, action: str | None = None, subtree: str | None = None,
         before: int | None = None) -> list[AuditRow]:
    """The newest ``n`` rows (older than seq ``before``, when given: the next page back), oldest
    first; ``subtree`` keeps rows acted in that namespace or below."""
    stmt = sa.select(*_ROW).order_by(audit_log.c.seq.desc()).limit(n)
    if before is not None:
        stmt = stmt.where(audit_log.c.seq < before)
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


def verify(conn: Connection, batch: int = 5000, expected: "Sequence[Head]" = (),
           start: "Head | None" = None, pause: "Callable[[float], None] | None" = None) -> VerifyResult:
    """Recompute the chain (from ``start``, a position verified before, when given: it must still be
    in the chain unchanged, and only the rows after it are recomputed); then each ``expected`` head
    (kept outside the database) must still be in it. ``rows`` counts the chain through its head.
    ``pause``: called with each batch's seconds between batches (a server's verification leaves the
    interpreter to the requests it serves)."""
    chained = _verify_chain(conn, batch, start, pause)
    if not chained.ok:
        return chained
    wanted = {want.seq: want.hash for want in expected}
    found = dict(conn.execute(sa.select(audit_log.c.seq, audit_log.c.hash)
                              .where(audit_log.c.seq.in_(list(wanted)))).all()) if wanted else {}
    for seq in sorted(wanted):
        if seq not in found:
            return VerifyResult(False, chained.rows, seq, f"row {seq}, a recorded head, is gone (the newest"
                                f" rows were deleted)", chained.head_seq, chained.head_hash)
        if found[seq] != wanted[seq]:
            return VerifyResult(False, chained.rows, seq, f"row {seq} differs from its recorded head (the"
                                f" chain was rewritten)", chained.head_seq, chained.head_hash)
    return chained


def yield_interpreter(worked: float) -> None:
    """A pause as long as the work just done (at most 0.1 s): a server's own long computation, such as
    a verification, holds the interpreter at most half the time, so requests in flight keep theirs."""
    time.sleep(min(max(worked, 0.0), 0.1))


def _verify_chain(conn: Connection, batch: int, start: "Head | None" = None,
                  pause: "Callable[[float], None] | None" = None) -> VerifyResult:
    prev, expected_seq, count = GENESIS, 1, 0
    if start is not None:
        got = conn.execute(sa.select(audit_log.c.hash).where(audit_log.c.seq == start.seq)).scalar()
        if got != start.hash:
            return VerifyResult(False, 0, start.seq, f"row {start.seq}, verified before, is "
                                + ("gone" if got is None else "no longer what it was (the chain was rewritten)"))
        prev, expected_seq, count = start.hash, start.seq + 1, start.seq
    after = expected_seq - 1
    while True:
        began = time.perf_counter()
        rows = conn.execute(sa.select(*_ROW, audit_log.c.detail, audit_log.c.row_format)
                            .where(audit_log.c.seq > after).order_by(audit_log.c.seq).limit(batch)).all()
        if not rows:
            return VerifyResult(True, count, head_seq=expected_seq - 1 if count else None,
                                head_hash=prev if count else None)
        for r in rows:
            if r.seq != expected_seq:
                return VerifyResult(False, count, expected_seq, f"row {expected_seq} is missing (next is {r.seq})")
            if r.prev_hash != prev:
                return VerifyResult(False, count, r.seq, f"row {r.seq} does not link to row {r.seq - 1}")
            record = r.detail if r.row_format == LEGACY_FORMAT else r.fields
            if row_hash(prev, r.seq, r.at, r.actor_ns, r.action, record, r.request_id, r.principal,
                        r.row_format) != r.hash:
                return VerifyResult(False, count, r.seq, f"row {r.seq} was altered (hash mismatch)")
            prev, expected_seq, count = r.hash, r.seq + 1, count + 1
        after = rows[-1].seq
        if pause is not None:
            pause(time.perf_counter() - began)
