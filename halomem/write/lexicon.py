"""Keeping the lexicon (corpus statistics of live rows, schema.lexicon) in step with every write.

Each write transaction that makes rows live or retires them calls ``count`` once, after it has
locked the memory rows it changes and before its audit row: one upsert in (namespace, lexeme)
order, so two writers never wait on each other's lexicon rows in opposite orders (no deadlock).
A retired row must still hold its content when it is counted out: ``erase`` counts first. A
lexeme left in no live row is deleted, so an erased memory's words do not outlive it here
(``erase --purge`` then rewrites the table files, as for memories).
"""
from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

_COUNT = sa.text("""
WITH changed AS (
    SELECT unnest(CAST(:added AS text[])) AS id, 1 AS sign
    UNION ALL SELECT unnest(CAST(:retired AS text[])), -1
), per_lexeme AS (
    SELECT m.namespace, u.lexeme, c.sign, coalesce(array_length(u.positions, 1), 1) AS n
    FROM changed c JOIN memories m ON m.id = c.id, unnest(m.content_tsv) AS u
    UNION ALL
    SELECT m.namespace, '', c.sign, m.doc_length FROM changed c JOIN memories m ON m.id = c.id
)
INSERT INTO lexicon (namespace, lexeme, docs, tokens)
SELECT namespace, lexeme, sum(sign), sum(sign * n) FROM per_lexeme
GROUP BY namespace, lexeme HAVING sum(sign) <> 0 OR sum(sign * n) <> 0
ORDER BY namespace, lexeme
ON CONFLICT (namespace, lexeme) DO UPDATE
SET docs = lexicon.docs + excluded.docs, tokens = lexicon.tokens + excluded.tokens
RETURNING namespace, lexeme, docs
""")
_FORGET = sa.text("DELETE FROM lexicon WHERE (namespace, lexeme) IN"
                  " (SELECT unnest(CAST(:namespaces AS text[])), unnest(CAST(:lexemes AS text[]))) AND docs <= 0")


def count(conn: Connection, *, added: Sequence[str] = (), retired: Sequence[str] = ()) -> None:
    """Count rows that became live in, and live rows that were retired out (by id)."""
    if not (added or retired):
        return
    gone = [(r.namespace, r.lexeme) for r in conn.execute(_COUNT, {"added": list(added), "retired": list(retired)})
            if r.docs <= 0]
    if gone:  # a lexeme no live row holds any more is dropped: an erased row's words leave no trace
        conn.execute(_FORGET, {"namespaces": [g[0] for g in gone], "lexemes": [g[1] for g in gone]})
