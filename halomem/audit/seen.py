"""What each search returned, and to whom: the record behind `audit who-saw` (and feedback, replay).

A search's audit row (hash-chained) names what it returned: its ``refs`` field, ``[[rank, tier, ref,
score], ...]`` (bounded by k, never content), and ``query``, a salted sha256. Beside it, two tables that are not in
the chain: ``search_seen`` (the same refs, one row each, indexed by memory for who-saw) and
``search_queries`` (the query text and its salt). Query texts are user data: they are pruned after
the retention period and forgotten when a memory they were returned is erased; without its salt a
digest tells nothing of the query, and `audit verify` never reads either table.
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import audit_log, memories, search_queries, search_seen
from ..index.acl import in_subtree
from ..results import Sighting, WhoSaw
from .log import Beside, beside_statement

SCORE_DIGITS = 4  # scores as recorded: enough to tell a re-ranking, not a fingerprint of the vectors


@dataclass(frozen=True)
class Seen:
    """One ref a search returned."""

    rank: int
    tier: str
    ref: str
    memory_id: str | None
    score: float


def refs_field(seen: Sequence[Seen]) -> list[list[object]]:
    """The audit row's ``refs`` field: the same refs ``search_seen`` holds."""
    return [[s.rank, s.tier, s.ref, round(s.score, SCORE_DIGITS)] for s in seen]


def query_digest(salt: str, query: str) -> str:
    return hashlib.sha256((salt + "\x00" + query).encode("utf-8")).hexdigest()


def new_salt() -> str:
    return secrets.token_hex(16)


def beside_row(seen: Sequence[Seen], salt: str, query: str) -> Beside:
    """The search row's refs and query text, written in the row's own statement (audit.log.append)."""
    return Beside(_SEARCH_ROW, {"seen_at": datetime.now(timezone.utc), "salt": salt, "query": query,
                                "ranks": [s.rank for s in seen], "tiers": [s.tier for s in seen],
                                "refs": [s.ref for s in seen], "ids": [s.memory_id for s in seen],
                                "scores": [round(s.score, SCORE_DIGITS) for s in seen]})


# one fixed statement on every search, the row's own (bench serve --costs): the refs as arrays,
# inserted by a data-modifying CTE beside the query text
_SEARCH_ROW = beside_statement(
    ", refs AS (INSERT INTO search_seen (seq, rank, tier, ref, memory_id, score)"
    " SELECT (SELECT seq FROM appended), r.rank, r.tier, r.ref, r.memory_id, r.score FROM unnest("
    "CAST(:ranks AS integer[]), CAST(:tiers AS text[]), CAST(:refs AS text[]), CAST(:ids AS text[]),"
    " CAST(:scores AS double precision[])) AS r(rank, tier, ref, memory_id, score))"
    " INSERT INTO search_queries (seq, at, salt, query) SELECT seq, :seen_at, :salt, :query FROM appended"
    " RETURNING seq").bindparams(sa.bindparam("seen_at", type_=sa.DateTime(timezone=True)))


def forget_queries_that_returned(conn: Connection, memory_ids: Iterable[str]) -> int:
    """Erasure: the query texts of searches that were returned one of ``memory_ids`` (a query that
    found a memory may quote it). Who-saw keeps the requests; replay then says why it cannot."""
    ids = list(memory_ids)
    if not ids:
        return 0
    returned = sa.select(search_seen.c.seq).where(search_seen.c.memory_id.in_(ids))
    return conn.execute(sa.delete(search_queries).where(search_queries.c.seq.in_(returned))).rowcount or 0


def prune(conn: Connection, retention_days: float) -> int:
    """Query texts older than the retention period; returns how many were removed."""
    if retention_days <= 0:
        return 0
    cutoff = datetime.now(timezone.utc) - timedelta(days=retention_days)
    return conn.execute(sa.delete(search_queries).where(search_queries.c.at < cutoff)).rowcount or 0


def chain_ids(conn: Connection, memory_id: str) -> list[str]:
    """Every version in ``memory_id``'s supersedence chain (erased ones included), by id. A chain
    never leaves its namespace (supersede writes the new head beside the old), so the walk is held
    to the anchor's namespace: no other namespace's rows are read."""
    home = sa.select(memories.c.namespace).where(memories.c.id == memory_id).scalar_subquery()
    mine = memories.c.namespace == home
    up = sa.select(memories.c.id, memories.c.supersedes).where(memories.c.id == memory_id, mine).cte(recursive=True)
    up = up.union(sa.select(memories.c.id, memories.c.supersedes).join(up, memories.c.id == up.c.supersedes)
                  .where(mine))
    down = sa.select(memories.c.id).where(memories.c.id == memory_id, mine).cte("down", recursive=True)
    down = down.union(sa.select(memories.c.id).join(down, memories.c.supersedes == down.c.id).where(mine))
    ids = {r[0] for r in conn.execute(sa.select(up.c.id))} | {r[0] for r in conn.execute(sa.select(down.c.id))}
    return sorted(ids) or [memory_id]


def who_saw(conn: Connection, memory_id: str, subtree: str | None, limit: int = 1000) -> WhoSaw:
    """Requests that were returned ``memory_id`` or any version of its chain, oldest first; with
    ``subtree``, only requests made in that namespace or below (what an admin administers)."""
    ids = chain_ids(conn, memory_id)
    stmt = (sa.select(audit_log.c.seq, audit_log.c.at, audit_log.c.principal, audit_log.c.actor_ns,
                      audit_log.c.request_id, audit_log.c.fields["via"].astext.label("via"), search_seen.c.memory_id,
                      search_seen.c.rank, search_seen.c.score)
            .join(search_seen, search_seen.c.seq == audit_log.c.seq)
            .where(search_seen.c.memory_id.in_(ids)).order_by(audit_log.c.seq, search_seen.c.rank).limit(limit))
    if subtree is not None:
        stmt = stmt.where(in_subtree(audit_log.c.actor_ns, subtree))
    sightings = [Sighting(r.seq, r.at.isoformat(), r.principal, r.actor_ns, r.request_id, r.via or "-",
                          r.memory_id, r.rank, r.score) for r in conn.execute(stmt)]
    if subtree is not None:  # versions seen from this subtree only: the chain's other ids are not its to learn
        ids = sorted({s.memory_id for s in sightings} | {memory_id})
    return WhoSaw(memory_id, ids, sightings)

