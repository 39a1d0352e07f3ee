"""Judgements: a query and the memories that answer it, with grades.

A file is JSONL, one judgement a line: ``{"query": "...", "relevant": {"m_...": 2, "m_...": 1}}``
(grades > 0; a list of ids means grade 1 each). ``from_feedback`` makes them from what agents said
about what they were returned: the searches' kept query texts (audit.seen) with `helpful` refs as
relevant (grade 1); a query whose only verdicts are `not-helpful`/`wrong` is kept with nothing
relevant, so a driver that ranks the same refs earns no credit there.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import feedback, search_queries
from ..errors import IngestError, InvalidInputError
from ..limits import check_query

MAX_JUDGEMENTS = 10_000


@dataclass(frozen=True)
class Judgement:
    query: str
    grades: dict[str, float]  # ref -> grade (> 0); absent: not relevant


def _parse(line: str, number: int) -> Judgement:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise IngestError(f"judgements line {number}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict) or "query" not in data or "relevant" not in data:
        raise IngestError(f"judgements line {number}: give query and relevant")
    try:
        query = check_query(data["query"])
    except InvalidInputError as exc:
        raise IngestError(f"judgements line {number}: {exc}") from None
    relevant = data["relevant"]
    if isinstance(relevant, list):
        relevant = {str(ref): 1 for ref in relevant}
    if not isinstance(relevant, dict) or not all(isinstance(g, (int, float)) and not isinstance(g, bool) and g >= 0
                                                 for g in relevant.values()):
        raise IngestError(f"judgements line {number}: relevant is a list of ids or an object of id -> grade >= 0")
    return Judgement(query, {str(ref): float(g) for ref, g in relevant.items() if g > 0})


def load_judgements(path: Path) -> list[Judgement]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"judgements file {path} unreadable: {getattr(exc, 'strerror', None) or exc}") from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise IngestError(f"judgements file {path} holds no judgements")
    if len(lines) > MAX_JUDGEMENTS:
        raise IngestError(f"judgements file {path} holds {len(lines)} judgements; the limit is {MAX_JUDGEMENTS}")
    return [_parse(line, n) for n, line in lines]


def from_feedback(conn: Connection, namespace: str) -> list[Judgement]:
    """Judgements from the feedback on searches made from ``namespace`` (what its view could
    return) whose query text is still kept (retention and erasure remove some)."""
    rows = conn.execute(
        sa.select(search_queries.c.query, feedback.c.ref, feedback.c.verdict)
        .select_from(feedback.join(search_queries, search_queries.c.seq == feedback.c.seq))
        .where(feedback.c.namespace == namespace)
        .order_by(feedback.c.id)).all()
    grades: dict[str, dict[str, float]] = {}
    for query, ref, verdict in rows:
        per_query = grades.setdefault(query, {})
        if verdict == "helpful":
            per_query[ref] = 1.0
        else:
            per_query.pop(ref, None)  # the latest verdict on a ref wins
    return [Judgement(q, g) for q, g in grades.items()]
