"""Reading policies: a namespace without its own uses its nearest ancestor's, else baseline."""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import policies
from ..index import Scope, visible
from ..types import Namespace
from .model import DEFAULT_POLICY, Policy, parse_policy


def effective_policy(conn: Connection, ns: Namespace) -> Policy:
    stmt = (sa.select(policies.c.namespace, policies.c.policy).where(visible(policies, Scope(ns)))
            .order_by(sa.func.length(policies.c.namespace).desc()).limit(1))
    row = conn.execute(stmt).first()
    return parse_policy(row.policy, row.namespace) if row else DEFAULT_POLICY


def list_policies(conn: Connection) -> list[Policy]:
    rows = conn.execute(sa.select(policies.c.namespace, policies.c.policy).order_by(policies.c.namespace))
    return [parse_policy(r.policy, r.namespace) for r in rows]
