"""Consolidation: the step of every write (remember, batch, ingest, documents, conversations, REST and
MCP alike) that keeps a namespace from filling with copies of what it already holds.

- The same text (after normalising case, width and white space: ``content_key``) already live in
  the namespace: nothing is written; the answer is the existing memory's id, ``unchanged``. Not for
  a keyed row (a document's file, a LangGraph item): its key is an identity of its own, so it is
  written and the copy it repeats is named ``similar``.
- A near-copy (a live memory of the namespace whose vector is very close and whose words mostly
  match: ``near_copies``) is written, and the answer names it (``similar``), so the agent can
  supersede it; under the namespace's policy ``consolidate: skip-similar`` it is not written.
- ``consolidate: off`` does neither.

Nothing here closes or deletes a row: a write that decides not to write says so in its own audit
row, and only supersede (with its own row) closes one. Concurrent writes of one text serialise on
a transaction lock per (namespace, text) and read again after it, so two racing copies make one row.

The thresholds were calibrated on a generated set of paraphrased copies and distinct facts
(`halomem bench consolidation`, docs/bench/consolidation.md): a near-copy's cosine above the
embedder's similarity floor, as a share of what is left above it, and its share of shared words.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..embed.tokenize import STOPWORDS, stem, terms
from ..texts import content_key  # noqa: F401 - the key every write path stores (re-exported)

CONTENT_LOCK = 0x6A10_0004  # the first key of the per-(namespace, text) locks
# a near-copy: cosine at least NEAR_COSINE of the way from the floor to 1, and at least NEAR_WORDS of
# the two texts' meaningful words shared (Jaccard of their stems)
NEAR_COSINE = 0.8
NEAR_WORDS = 0.5
NEIGHBOURS = 5  # live memories of the namespace looked at for each new one
# how a near-copy lookup walks the HNSW graph: until it has its NEIGHBOURS of the namespace, with a
# short candidate list (a near-copy is very near: the walk needs no breadth to find it)
NEAR_SETTINGS = "SET LOCAL hnsw.iterative_scan = strict_order; SET LOCAL hnsw.ef_search = 16; SET LOCAL enable_sort = off"

OFF, REPORT, SKIP_SIMILAR = "off", "report", "skip-similar"


@dataclass(frozen=True)
class Similar:
    """A live memory a new one nearly copies, and how near (the cosine of their vectors)."""

    id: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "score": round(self.score, 4)}


LOCK_BUCKETS = 256  # a bulk write of 40,000 texts holds at most this many locks, not 40,000
_LOCK = sa.text("SELECT count(pg_advisory_xact_lock(:lock_class, b)) FROM (SELECT DISTINCT"
                " hashtext(:ns || chr(31) || k) & :mask AS b FROM unnest(CAST(:keys AS text[])) AS k ORDER BY 1) AS buckets")


def lock_texts(conn: Connection, ns: str, keys: Iterable[str]) -> None:
    """Hold the locks of ``keys`` (one per bucket of (namespace, text) hashes) until this transaction
    ends, taken in bucket order, so two writers never wait on each other in opposite orders."""
    ordered = sorted(set(keys))
    if ordered:
        conn.execute(_LOCK, {"lock_class": CONTENT_LOCK, "ns": ns, "keys": ordered, "mask": LOCK_BUCKETS - 1})


def live_with_keys(conn: Connection, ns: str, keys: Sequence[str]) -> dict[str, str]:
    """content key -> id of a live memory of ``ns`` with that text (read after ``lock_texts``)."""
    from ..db.schema import memories

    if not keys:
        return {}
    rows = conn.execute(sa.select(memories.c.content_key, sa.func.min(memories.c.id)).where(
        memories.c.namespace == ns, memories.c.content_key.in_(sorted(set(keys))),
        memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None)).group_by(memories.c.content_key))
    return {key: memory_id for key, memory_id in rows}


def words(text: str) -> frozenset[str]:
    return frozenset(stem(t) for t in terms(text) if t not in STOPWORDS)


def numbers(text: str) -> frozenset[str]:
    """The numbers a text states: two texts that state different ones hold different facts."""
    return frozenset(t for t in terms(text) if t.isdigit())


def names(text: str) -> frozenset[str]:
    """Words a text capitalises inside a sentence (names: Maria, Lisbon, ArgoCD), lower-cased."""
    out = set()
    for sentence in text.replace("!", ".").replace("?", ".").replace(":", ".").split("."):
        words_ = sentence.split()
        out.update(w.strip(",;()\"'").lower() for w in words_[1:] if w[:1].isupper())
    return frozenset(w for w in out if w)


def same_facts(a: str, b: str) -> bool:
    """Whether two texts state the same numbers and the same names (each text's names appear in the
    other, in any case): an update of a value or of who does what is a distinct fact, not a copy."""
    lower_a, lower_b = set(terms(a)), set(terms(b))
    return numbers(a) == numbers(b) and names(a) <= lower_b and names(b) <= lower_a


def word_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def nearly_copies(cosine: float, text: str, other: str, floor: float,
                  known: tuple[frozenset[str], frozenset[str]] | None = None) -> bool:
    """The calibrated rule (module doc): near in meaning and in words, stating the same facts,
    cheapest test first; ``known``: both texts' ``words`` when the caller has them already."""
    if cosine < floor + NEAR_COSINE * (1.0 - floor):
        return False
    mine, theirs = known or (words(text), words(other))
    return word_overlap(mine, theirs) >= NEAR_WORDS and same_facts(text, other)


# each new text's nearest live memories of the namespace, for a batch of texts in one statement
_NEAREST = sa.text(
    "SELECT v.i, m.id, m.content, 1 - (m.embedding <=> v.vec) AS cosine"
    " FROM unnest(CAST(:vecs AS vector[])) WITH ORDINALITY AS v(vec, i) CROSS JOIN LATERAL ("
    "  SELECT id, content, embedding FROM memories WHERE namespace = :ns AND t_valid_to IS NULL"
    "  AND erased_at IS NULL AND embedding IS NOT NULL ORDER BY embedding <=> v.vec LIMIT :k) AS m")
_NEAREST_BATCH = 256


def near_copies(conn: Connection, ns: str, items: Sequence[tuple[str, Sequence[float], Sequence[str]]],
                floor: float) -> list[list[Similar]]:
    """For each (text, vector, ids to leave out), the live memories of ``ns`` (its own, never an
    ancestor's) that the text nearly copies, nearest first. ``conn`` should walk HNSW with
    ``hnsw.iterative_scan`` on (the caller's transaction sets it)."""
    found: list[list[Similar]] = [[] for _ in items]
    for start in range(0, len(items), _NEAREST_BATCH):
        chunk = items[start:start + _NEAREST_BATCH]
        vectors = ["[" + ",".join(f"{x:.7g}" for x in vector) + "]" for _, vector, _ in chunk]
        for row in conn.execute(_NEAREST, {"vecs": vectors, "ns": ns, "k": NEIGHBOURS}):
            at = int(row.i) - 1
            if row.id in chunk[at][2]:
                continue
            if nearly_copies(float(row.cosine), chunk[at][0], row.content, floor):
                found[start + at].append(Similar(row.id, float(row.cosine)))
    for similar in found:
        similar.sort(key=lambda s: (-s.score, s.id))
    return found


class RunCopies:
    """Near-copies among the memories one run writes (an ingest of a folder, batch after batch), kept
    in memory. When the namespace held no live memory as the run began, the database has nothing to
    offer a lookup but the run's own rows: those are compared here (a thousand documents cost their
    dot products, not a thousand index walks), and the database is not asked."""

    def __init__(self, floor: float, stored: bool) -> None:
        self.floor = floor
        self.stored = stored  # the namespace held live memories when the run began: ask the database
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._words: list[frozenset[str]] = []
        self._vectors: Any = None  # a float32 matrix, one row per id

    def find(self, items: Sequence[tuple[str, Sequence[float], Sequence[str]]]) -> list[list[Similar]]:
        import numpy as np

        found: list[list[Similar]] = [[] for _ in items]
        if not self._ids or not items:
            return found
        cosines = np.asarray([v for _, v, _ in items], dtype=np.float32) @ self._vectors.T
        for at, (text, _, exclude) in enumerate(items):
            mine = words(text)
            for j in np.argsort(-cosines[at])[:NEIGHBOURS]:
                other = int(j)
                if self._ids[other] in exclude:
                    continue
                if nearly_copies(float(cosines[at, other]), text, self._texts[other], self.floor,
                                 (mine, self._words[other])):
                    found[at].append(Similar(self._ids[other], float(cosines[at, other])))
        return found

    def add(self, ids: Sequence[str], texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        import numpy as np

        if not ids:
            return
        self._ids.extend(ids)
        self._texts.extend(texts)
        self._words.extend(words(t) for t in texts)
        added = np.asarray(vectors, dtype=np.float32)
        self._vectors = added if self._vectors is None else np.vstack([self._vectors, added])
