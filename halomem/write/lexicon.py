"""Keeping the lexicon (corpus statistics of live rows, schema.lexicon) and its history
(schema.lexicon_events) in step with every write.

Each write transaction that makes rows live or retires them calls ``count`` once, after it has
locked the memory rows it changes (and closed the ones it supersedes) and before its audit row: one
statement upserting both tables in key order, so two writers never wait on each other's rows in
opposite orders (no deadlock). A row born counts +1 at its t_valid_from, a row closed -1 at its
t_valid_to: the events' sum is today's lexicon, and today's minus the events after an instant is
that instant's (index.lexical). ``erase`` takes a row out of every instant, while it still holds
its content: out of today's counts if it was live, and its birth and closing undone in the
history. A lexeme left in no live row, and an event left at zero, are deleted, so an erased
memory's words do not outlive it here (``erase --purge`` then rewrites the table files, as for
memories).
"""
from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

# (row id, sign, event): the row's birth (at t_valid_from) or closing (at t_valid_to) moves the history
# by sign; an erasure undoes both (a live row's closing has no time and is skipped)
_CHANGES = {
    "count": """
    SELECT unnest(CAST(:added AS text[])) AS id, 1 AS sign, 'born' AS event
    UNION ALL SELECT unnest(CAST(:retired AS text[])), -1, 'closed'""",
    "erase": """
    SELECT unnest(CAST(:erased AS text[])) AS id, -1 AS sign, 'born' AS event
    UNION ALL SELECT unnest(CAST(:erased AS text[])), 1, 'closed'""",
}

_STATEMENT = """
WITH changed AS ({changes}
), dated AS (
    SELECT m.namespace, m.content_tsv, m.doc_length, c.sign,
           CASE c.event WHEN 'born' THEN m.t_valid_from ELSE m.t_valid_to END AS at,
           {today} AS today
    FROM changed c JOIN memories m ON m.id = c.id
), per_lexeme AS (
    SELECT d.namespace, u.lexeme, d.at, d.sign, d.today, coalesce(array_length(u.positions, 1), 1) AS n
    FROM dated d, unnest(d.content_tsv) AS u
    UNION ALL
    SELECT d.namespace, '', d.at, d.sign, d.today, d.doc_length FROM dated d
), events AS (
    INSERT INTO lexicon_events AS e (namespace, lexeme, at, docs, tokens)
    SELECT namespace, lexeme, at, sum(sign), sum(sign * n) FROM per_lexeme WHERE at IS NOT NULL
    GROUP BY namespace, lexeme, at HAVING sum(sign) <> 0 OR sum(sign * n) <> 0
    ORDER BY namespace, lexeme, at
    ON CONFLICT (namespace, lexeme, at) DO UPDATE
    SET docs = e.docs + excluded.docs, tokens = e.tokens + excluded.tokens
)
INSERT INTO lexicon (namespace, lexeme, docs, tokens)
SELECT namespace, lexeme, sum(today), sum(today * n) FROM per_lexeme WHERE today <> 0
GROUP BY namespace, lexeme HAVING sum(today) <> 0 OR sum(today * n) <> 0
ORDER BY namespace, lexeme
ON CONFLICT (namespace, lexeme) DO UPDATE
SET docs = lexicon.docs + excluded.docs, tokens = lexicon.tokens + excluded.tokens
RETURNING namespace, lexeme, docs
"""
_COUNT = sa.text(_STATEMENT.format(changes=_CHANGES["count"], today="c.sign"))
# an erased row leaves today's counts only if it was live (a closed row left them when it closed)
_ERASE = sa.text(_STATEMENT.format(changes=_CHANGES["erase"],
                                   today="CASE WHEN c.event = 'born' AND m.t_valid_to IS NULL THEN -1 ELSE 0 END"))
# after an erasure (its rows still hold their content): the events it brought to zero
_FORGET_EVENTS = sa.text("""
DELETE FROM lexicon_events WHERE docs = 0 AND tokens = 0 AND (namespace, lexeme, at) IN (
    SELECT m.namespace, u.lexeme, e.at
    FROM memories m CROSS JOIN LATERAL (VALUES (m.t_valid_from), (m.t_valid_to)) AS e(at),
         unnest(m.content_tsv) AS u
    WHERE m.id = ANY(CAST(:erased AS text[])) AND e.at IS NOT NULL
    UNION ALL
    SELECT m.namespace, '', e.at
    FROM memories m CROSS JOIN LATERAL (VALUES (m.t_valid_from), (m.t_valid_to)) AS e(at)
    WHERE m.id = ANY(CAST(:erased AS text[])) AND e.at IS NOT NULL)
""")
_FORGET = sa.text("DELETE FROM lexicon WHERE (namespace, lexeme) IN"
                  " (SELECT unnest(CAST(:namespaces AS text[])), unnest(CAST(:lexemes AS text[]))) AND docs <= 0")


def count(conn: Connection, *, added: Sequence[str] = (), retired: Sequence[str] = ()) -> None:
    """Count rows that became live in, and live rows that were closed out (by id; closed ones
    already carry their t_valid_to)."""
    if added or retired:
        _forget_emptied(conn, conn.execute(_COUNT, {"added": list(added), "retired": list(retired)}))


def erase(conn: Connection, erased: Sequence[str]) -> None:
    """Take rows out of every instant, before their content is removed (by id, not yet erased)."""
    if erased:
        _forget_emptied(conn, conn.execute(_ERASE, {"erased": list(erased)}))
        conn.execute(_FORGET_EVENTS, {"erased": list(erased)})


def _forget_emptied(conn: Connection, counted: sa.CursorResult) -> None:
    gone = [(r.namespace, r.lexeme) for r in counted if r.docs <= 0]
    if gone:  # a lexeme no live row holds any more is dropped: an erased row's words leave no trace
        conn.execute(_FORGET, {"namespaces": [g[0] for g in gone], "lexemes": [g[1] for g in gone]})
