"""Which sessions a run extracts: after a chat ingest, each session with a turn new or changed, or
whose last extraction did not succeed; for ``extract --retry``, each stored session whose last one
failed; by name, any stored session."""
from __future__ import annotations

from typing import Any, Sequence

import sqlalchemy as sa

from ..audit.usage import extraction_outcomes
from ..errors import NotFoundError
from ..types import Namespace
from . import lookups
from .extract import Session
from .protocol import Turn


def sessions_to_extract(engine: sa.Engine, ns: Namespace, rows: Sequence[Any], outcomes: Sequence[Any]) -> list[Session]:
    """The sessions of a chat ingest (its rows and their outcomes, in order) that need extracting."""
    turns: dict[str, list[Turn]] = {}
    fresh: set[str] = set()
    for row, outcome in zip(rows, outcomes):
        session = row.provenance["session"]
        turns.setdefault(session, []).append(Turn(row.provenance["turn"], outcome.id, row.content))
        if outcome.status != "unchanged":
            fresh.add(session)
    with engine.connect() as conn:
        last = extraction_outcomes(conn, ns.path)
    return [Session(name, tuple(said)) for name, said in turns.items()
            if name in fresh or last.get(said[0].id, {}).get("outcome") != "ok"]


def failed_sessions(engine: sa.Engine, ns: Namespace) -> list[Session]:
    """The stored sessions of ``ns`` whose last extraction failed (one whose turns were since erased is gone)."""
    out = []
    with engine.connect() as conn:
        for first, record in extraction_outcomes(conn, ns.path).items():
            if record.get("outcome") == "ok":
                continue
            name = lookups.session_of(conn, ns.path, first)
            turns = lookups.stored_turns(conn, ns.path, name) if name is not None else []
            if turns:
                out.append(Session(name, tuple(turns)))
    return out


def stored_sessions(engine: sa.Engine, ns: Namespace, names: Sequence[str]) -> list[Session]:
    out = []
    with engine.connect() as conn:
        for name in names:
            turns = lookups.stored_turns(conn, ns.path, name)
            if not turns:
                raise NotFoundError(f"no stored session {name!r} in {ns}")
            out.append(Session(name, tuple(turns)))
    return out
