"""What formation's audit rows say, read back as data: a namespace's model tokens since a time (its
daily budget), tokens per namespace and day (`halomem usage`), and the latest extraction outcome of
each session (``extract --retry``). The rows are the one record: nothing is counted twice elsewhere."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import audit_log
from ..index.acl import in_subtree

MODEL, EXTRACT = "model", "extract"  # one row per model call; one per session extracted (or not)


def _tokens(field: str) -> sa.ColumnElement[Any]:
    return sa.func.coalesce(sa.cast(audit_log.c.fields[field].astext, sa.BigInteger), 0)


def tokens_since(conn: Connection, ns: str, since: datetime) -> int:
    """Tokens (in and out) of ``ns``'s model calls since ``since``."""
    return int(conn.execute(sa.select(sa.func.coalesce(sa.func.sum(_tokens("tokens_in") + _tokens("tokens_out")), 0))
                            .where(audit_log.c.action == MODEL, audit_log.c.actor_ns == ns,
                                   audit_log.c.at >= since)).scalar_one())


def usage(conn: Connection, subtree: str, since: datetime) -> list[dict[str, Any]]:
    """Model calls per namespace (``subtree`` and below) and UTC day since ``since``: calls, failed
    calls, tokens in and out; oldest day first."""
    day = sa.func.to_char(sa.func.timezone("UTC", audit_log.c.at), "YYYY-MM-DD").label("day")
    failed = sa.func.count().filter(audit_log.c.fields["outcome"].astext != "ok")
    rows = conn.execute(sa.select(audit_log.c.actor_ns, day, sa.func.count(), failed,
                                  sa.func.sum(_tokens("tokens_in")), sa.func.sum(_tokens("tokens_out")))
                        .where(audit_log.c.action == MODEL, in_subtree(audit_log.c.actor_ns, subtree),
                               audit_log.c.at >= since)
                        .group_by(audit_log.c.actor_ns, day).order_by(day, audit_log.c.actor_ns)).all()
    return [{"namespace": ns, "day": d, "calls": int(calls), "failed": int(bad), "tokens_in": int(t_in or 0),
             "tokens_out": int(t_out or 0)} for ns, d, calls, bad, t_in, t_out in rows]


def extraction_outcomes(conn: Connection, ns: str) -> dict[str, dict[str, Any]]:
    """Each session of ``ns`` (by the id of its first turn) and the record of its latest extraction."""
    first = audit_log.c.fields["first_turn"].astext
    latest = (sa.select(sa.func.max(audit_log.c.seq))
              .where(audit_log.c.action == EXTRACT, audit_log.c.actor_ns == ns, first.is_not(None))
              .group_by(first)).scalar_subquery()
    rows = conn.execute(sa.select(first, audit_log.c.fields).where(audit_log.c.seq.in_(latest))).all()
    return {turn: dict(fields) for turn, fields in rows}
