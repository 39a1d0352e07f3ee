"""The reads formation needs, each inside one namespace (the caller's own: the only rows it may
supersede): a stored session's turns, the session a turn belongs to, and a new fact's candidates for
an update (live memories near it in meaning)."""
from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import memories
from .protocol import Candidate, Turn

SESSION_SOURCE = "session:"  # a chat turn's source (intake.chat); a fact's is FACTS_SOURCE + session
FACTS_SOURCE = "facts:"
CANDIDATES = 5  # live memories shown to the model for one new fact
# a candidate's cosine is at least this share of the way from the embedder's noise floor to 1: near
# enough to be about the same thing (a near-copy is 0.8 of the way: write.consolidate)
CANDIDATE_SHARE = 0.45

_LIVE = (memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None))


def stored_turns(conn: Connection, ns: str, session: str) -> list[Turn]:
    """The live turns of a stored session, in the order they were said."""
    rows = conn.execute(sa.select(memories.c.id, memories.c.content, memories.c.provenance)
                        .where(memories.c.namespace == ns, memories.c.source == SESSION_SOURCE + session, *_LIVE)
                        .order_by(memories.c.position, memories.c.id)).all()
    return [Turn(_number(r.provenance, i), r.id, r.content) for i, r in enumerate(rows, 1)]


def _number(provenance: object, fallback: int) -> int:
    turn = provenance.get("turn") if isinstance(provenance, dict) else None
    return turn if isinstance(turn, int) and not isinstance(turn, bool) and turn > 0 else fallback


def session_of(conn: Connection, ns: str, turn_id: str) -> str | None:
    """The session a stored turn of ``ns`` was said in (None: erased, or not a turn)."""
    source = conn.execute(sa.select(memories.c.source).where(memories.c.namespace == ns, memories.c.id == turn_id,
                                                             memories.c.erased_at.is_(None))).scalar()
    return source[len(SESSION_SOURCE):] if isinstance(source, str) and source.startswith(SESSION_SOURCE) else None


_NEAREST = sa.text(
    "SELECT id, content, t_valid_from, 1 - (embedding <=> CAST(:vec AS vector)) AS cosine FROM memories"
    " WHERE namespace = :ns AND t_valid_to IS NULL AND erased_at IS NULL AND key IS NULL AND embedding IS NOT NULL"
    " ORDER BY embedding <=> CAST(:vec AS vector) LIMIT :k")


def candidates(conn: Connection, ns: str, vector: Sequence[float], floor: float) -> list[Candidate]:
    """The live unkeyed memories of ``ns`` near a new fact: what it may repeat or update. Keyed rows
    (a turn, a document's file, a LangGraph item) are identities of their own, never an update's target."""
    conn.exec_driver_sql("SET LOCAL hnsw.iterative_scan = strict_order")
    least = floor + CANDIDATE_SHARE * (1.0 - floor)
    rows = conn.execute(_NEAREST, {"vec": "[" + ",".join(f"{x:.7g}" for x in vector) + "]", "ns": ns,
                                   "k": CANDIDATES}).all()
    return [Candidate(r.id, r.content, r.t_valid_from.date().isoformat()) for r in rows if float(r.cosine) >= least]
