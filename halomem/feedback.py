"""Feedback on what a search returned: `helpful`, `not-helpful` or `wrong`, with an optional note.

Accepted only for a ref the search's own rows say it returned (audit.seen), from the principal it
was returned to or an admin over the namespace it searched from (auth.rights.may_judge). Every
other case gets one answer, "no such ref returned to you in that request", so feedback is no oracle
into requests, refs or memories the caller cannot see. Each feedback is audited (verdict and ids,
never the note); the note is user data and is cleared when its memory is erased.
"""
from __future__ import annotations

from typing import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .audit import log as audit
from .auth.rights import Caller, may_judge
from .db.schema import audit_log, feedback, memories, search_seen
from .errors import InvalidInputError, NotFoundError
from .index.acl import Scope, visible
from .limits import MAX_NOTE_CHARS, check_id, check_text
from .types import Namespace
from .results import Feedback

VERDICTS = ("helpful", "not-helpful", "wrong")


def check_verdict(value: object) -> str:
    if value not in VERDICTS:
        raise InvalidInputError(f"verdict must be one of {', '.join(VERDICTS)}")
    return str(value)


def give(conn: Connection, caller: Caller, about: str, ref: str, verdict: str, note: str | None,
         request_id: str) -> Feedback:
    """Record ``caller``'s verdict on ``ref`` as returned by the search of request ``about``."""
    about, ref = check_id(about, "request id"), check_id(ref, "ref")
    verdict = check_verdict(verdict)
    note = check_text(note, "note", MAX_NOTE_CHARS, allow_empty=True) if note else None
    found = conn.execute(
        sa.select(audit_log.c.seq, audit_log.c.actor_ns, audit_log.c.principal, search_seen.c.ref,
                  search_seen.c.memory_id)
        .select_from(audit_log.join(search_seen, search_seen.c.seq == audit_log.c.seq))
        .where(audit_log.c.request_id == about, audit_log.c.action == "search",
               sa.or_(search_seen.c.ref == ref, search_seen.c.memory_id == ref))
        .order_by(audit_log.c.seq).limit(1)).first()
    if found is None or not may_judge(caller, found.principal, found.actor_ns) \
            or not _readable(conn, found.memory_id, found.actor_ns):
        raise NotFoundError(f"no ref {ref!r} was returned to you in request {about!r}")
    row = conn.execute(feedback.insert().values(
        seq=found.seq, ref=found.ref, memory_id=found.memory_id, namespace=found.actor_ns,
        principal=caller.principal_id, verdict=verdict, note=note).returning(feedback.c.id, feedback.c.at)).one()
    audit.append(conn, found.actor_ns, "feedback", {"outcome": "ok", "id": int(row.id), "of": found.seq,
                                                    "ref": found.ref, "verdict": verdict, "note": bool(note)}, request_id)
    return Feedback(int(row.id), about, found.ref, found.memory_id, found.actor_ns, verdict, note, row.at.isoformat())


def _readable(conn: Connection, memory_id: str | None, search_namespace: str) -> bool:
    """Whether the memory a ref names is still readable from the namespace that searched (current or
    superseded, never erased): feedback on anything else is refused like any unknown ref, so no note
    is ever stored on an erased memory (a note may quote it)."""
    if memory_id is None:
        return True  # a concept's ref: concepts are not erased
    return conn.execute(sa.select(memories.c.id).where(
        memories.c.id == memory_id, visible(memories, Scope(Namespace(search_namespace)), live=False),
        memories.c.erased_at.is_(None))).first() is not None


def forget_notes(conn: Connection, memory_ids: Iterable[str]) -> int:
    """Erasure: the notes left on ``memory_ids`` (a note may quote the memory); verdicts stay."""
    ids = list(memory_ids)
    if not ids:
        return 0
    return conn.execute(sa.update(feedback).where(feedback.c.memory_id.in_(ids), feedback.c.note.is_not(None))
                        .values(note=None)).rowcount or 0
