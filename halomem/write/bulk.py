"""Bulk writes (remember_many, JSONL/CSV ingest, documents, conversations): consolidate, embed, then
one COPY transaction with its audit row.

Every row gets an outcome: ``created``; ``superseded`` (written, and its key's live row closed, its
chain kept); ``unchanged`` (its key's live row already holds this text, or, under consolidation,
an unkeyed row whose text the namespace already holds: nothing written, the existing id answered;
a keyed row is an identity of its own, a file or a store item, and is written with the copy named
as similar, so retiring one file never takes another's text with it); ``similar``
(under ``consolidate: skip-similar``, a near-copy of a live memory: not written). A created row
names the live memories it nearly copies (write.consolidate). The whole batch commits in one
transaction with its audit row, or none of it does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import sqlalchemy as sa

from .. import audit
from ..db.schema import memories
from ..embed import Embedder
from ..embed.passages import Embedded, embed_memories
from ..errors import ConflictError
from ..index import IndexReader, Scope
from ..types import Namespace
from . import chains, consolidate, lexicon, places
from .consolidate import OFF, SKIP_SIMILAR, Similar, content_key
from .mentions import mentioned_entities
from .vector_swap import hold_store_embedder
from .writer import new_memory_id, new_request_id

EMBED_BATCH = 512


@dataclass
class ParsedRow:
    line: int
    content: str
    source: str | None
    provenance: dict[str, Any]
    key: str | None = None  # the caller's stable id for this memory (a doc section, a ticket)
    # a document's structure (intake.document.Document.blocks): its passages are cut along it
    blocks: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Outcome:
    """What became of one row (module doc): the memory holding its text now, and how."""

    status: str  # created | superseded | unchanged | similar
    id: str
    old: str | None = None  # superseded: the key's row it closed
    similar: tuple[Similar, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "id": self.id, **({"supersedes": self.old} if self.old else {}),
                "similar": [s.to_dict() for s in self.similar]}


@dataclass
class Applied:
    outcomes: list[Outcome] = field(default_factory=list)  # one per row, in order

    @property
    def written(self) -> list[str]:
        return [o.id for o in self.outcomes if o.status in ("created", "superseded")]

    @property
    def unchanged(self) -> list[str]:
        return [o.id for o in self.outcomes if o.status == "unchanged"]

    @property
    def superseded(self) -> list[tuple[str, str]]:
        return [(o.old, o.id) for o in self.outcomes if o.status == "superseded" and o.old]


def _vector_text(vec: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vec) + "]"


@dataclass
class Prepared:
    """A batch decided and embedded, ready for its transaction (``commit``)."""

    ns: Namespace
    rows: list[ParsedRow]
    texts: list[str]  # each row's content key
    decided: list[Outcome | int | None]  # an outcome, an earlier row with the same text, or None: write it
    embedded: dict[int, Embedded]
    mode: str
    floor: float
    embedder: Embedder
    by_key: dict[str, Any]  # key -> the live row it named when prepared


def bulk_apply(engine: Any, embedder: Embedder, ns: Namespace, rows: list[ParsedRow], *, label: str,
               mode: str = OFF, floor: float = 0.0, progress: Callable[[int], None] | None = None,
               request_id: str | None = None, on_write: Callable[[], None] | None = None,
               dry_run: bool = False) -> Applied:
    """Write ``rows`` into ``ns`` (module doc): ``prepare`` then ``commit``."""
    prepared = prepare(engine, embedder, ns, rows, mode=mode, floor=floor, progress=progress, dry_run=dry_run)
    if isinstance(prepared, Applied):
        return prepared
    if on_write:
        on_write()  # embedding done; the database phase begins
    return commit(engine, prepared, label=label, request_id=request_id or new_request_id())


def prepare(engine: Any, embedder: Embedder, ns: Namespace, rows: list[ParsedRow], *, mode: str = OFF,
            floor: float = 0.0, progress: Callable[[int], None] | None = None,
            dry_run: bool = False) -> Prepared | Applied:
    """Decide each row (by reading what is live), embed those to write and look for their near-copies:
    all outside any transaction. ``mode`` is the namespace's consolidation, ``floor`` its embedder's
    similarity floor. A key already live with the same content is not embedded again (a nightly
    re-sync of unchanged documents costs no embedding). ``dry_run``: the Applied it would be, with no
    ids and no near-copies (nothing is embedded)."""
    texts = [content_key(r.content) for r in rows]
    with engine.connect() as conn:
        by_key = _live_by_key(conn, ns, rows)
        by_text = consolidate.live_with_keys(conn, ns.path, texts) if mode != OFF else {}
    decided: list[Outcome | int | None] = []  # an outcome, the index of an earlier row with this text, or None
    first_of: dict[str, int] = {}
    for i, (row, text) in enumerate(zip(rows, texts)):
        old = by_key.get(row.key) if row.key is not None else None
        if old is not None and old.content == row.content:
            decided.append(Outcome("unchanged", old.id))
        elif mode != OFF and row.key is None and text in by_text:
            decided.append(Outcome("unchanged", by_text[text]))
        elif mode != OFF and row.key is None and text in first_of:
            decided.append(first_of[text])
        else:  # a keyed row is an identity (a file, a store item): written, its copies named as similar
            if row.key is None:
                first_of.setdefault(text, i)
            decided.append(None)
    todo = [i for i, d in enumerate(decided) if d is None]
    if progress and len(todo) < len(rows):
        progress(len(rows) - len(todo))
    if dry_run:  # what would be written: no ids yet, and no near-copies (nothing embedded)
        return Applied([d if isinstance(d, Outcome) else Outcome("unchanged", "") if isinstance(d, int) else
                        Outcome("superseded", "", by_key[rows[i].key].id) if rows[i].key in by_key else
                        Outcome("created", "") for i, d in enumerate(decided)])
    embedded: dict[int, Embedded] = {}
    for start in range(0, len(todo), EMBED_BATCH):
        batch = todo[start:start + EMBED_BATCH]
        made = embed_memories(embedder, [rows[i].content for i in batch], [rows[i].blocks for i in batch])
        embedded.update(zip(batch, made))
        if progress:
            progress(len(batch))
    return Prepared(ns, rows, texts, decided, embedded, mode, floor, embedder, by_key)


def commit(engine: Any, p: Prepared, *, label: str, request_id: str,
           run: consolidate.RunCopies | None = None) -> Applied:
    """Look for the near-copies of the rows to write (database work, so ``commit`` may run beside the
    next batch's ``prepare``; or, for a ``run`` into a namespace that was empty, among the run's own
    rows, in memory), then the batch's one transaction with its audit row: rows whose text or key
    another writer made live since ``prepare`` read are decided again under lock."""
    todo = [i for i, d in enumerate(p.decided) if d is None]
    similar: dict[int, tuple[Similar, ...]] = {}
    if p.mode != OFF and todo:
        items = [(p.rows[i].content, p.embedded[i].vector,
                  [p.by_key[p.rows[i].key].id] if p.rows[i].key in p.by_key else []) for i in todo]
        if run is not None and not run.stored:
            found_all = run.find(items)
        else:
            with engine.connect() as conn:
                conn.exec_driver_sql(consolidate.NEAR_SETTINGS)
                found_all = consolidate.near_copies(conn, p.ns.path, items, p.floor)
        for i, found in zip(todo, found_all):
            if found:
                similar[i] = tuple(found)
        if p.mode == SKIP_SIMILAR:
            for i in [i for i in todo if i in similar]:
                p.decided[i] = Outcome("similar", similar[i][0].id, similar=similar[i])
    try:
        with engine.begin() as conn:
            applied = _apply(conn, p.embedder, p.ns, p.rows, p.texts, p.decided, p.embedded, similar, p.mode, label,
                             request_id)
    except sa.exc.IntegrityError as exc:
        if "memories_live_key_idx" in str(exc.orig):
            raise ConflictError("another write used the same key at the same time; nothing was ingested,"
                                " retry") from None
        raise
    if run is not None:  # what later batches of the run compare themselves with
        made = [i for i, o in enumerate(applied.outcomes) if o.status in ("created", "superseded") and i in p.embedded]
        run.add([applied.outcomes[i].id for i in made], [p.rows[i].content for i in made],
                [p.embedded[i].vector for i in made])
    return applied


def _live_by_key(conn: Any, ns: Namespace, rows: Sequence[ParsedRow], lock: bool = False) -> dict[str, Any]:
    """key -> the live row of ``ns`` it names (id, content, source, position); ``lock``: FOR UPDATE,
    so a concurrent ingest of the same keys waits."""
    keys = [r.key for r in rows if r.key is not None]
    if not keys:
        return {}
    stmt = (sa.select(memories.c.key, memories.c.id, memories.c.content, memories.c.source, memories.c.position)
            .where(memories.c.namespace == ns.path, memories.c.key.in_(keys),
                   memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None)))
    return {r.key: r for r in conn.execute(stmt.with_for_update() if lock else stmt)}


def _apply(conn: Any, embedder: Embedder, ns: Namespace, rows: list[ParsedRow], texts: list[str],
           decided: list[Outcome | int | None], embedded: dict[int, Embedded], similar: dict[int, tuple[Similar, ...]],
           mode: str, label: str, request_id: str) -> Applied:
    hold_store_embedder(conn, embedder.name)
    pending = [i for i, d in enumerate(decided) if d is None]
    if mode != OFF:  # texts another writer made live since they were read: now unchanged
        consolidate.lock_texts(conn, ns.path, [texts[i] for i in pending])
        live = consolidate.live_with_keys(conn, ns.path, [texts[i] for i in pending])
    live_keys = _live_by_key(conn, ns, rows, lock=True)
    outcomes: list[Outcome | None] = [d if isinstance(d, Outcome) else None for d in decided]
    new: list[tuple[int, str, ParsedRow, str | None]] = []  # (row index, id, row, the key's old id)
    kept: list[int | None] = []  # the places successors keep (chains.successor_place)
    for i in pending:
        row = rows[i]
        old = live_keys.get(row.key) if row.key is not None else None
        if old is not None and old.content == row.content:
            outcomes[i] = Outcome("unchanged", old.id)
            continue
        if mode != OFF and row.key is None and texts[i] in live:
            outcomes[i] = Outcome("unchanged", live[texts[i]])
            continue
        memory_id = new_memory_id()
        place = None
        if old is not None:  # close the old head first (one live row per key), by the one chain rule
            closed = chains.close_head(conn, ns, old.id, memory_id)
            row = replace(row, source=chains.successor_source(row.source, closed))
            place = chains.successor_place(row.source, closed)
        new.append((i, memory_id, row, old.id if old is not None else None))
        kept.append(place)
        outcomes[i] = Outcome("superseded" if old is not None else "created", memory_id,
                              old.id if old is not None else None, similar.get(i, ()))
    for i, d in enumerate(decided):  # a repeat of an earlier row's text: that row's outcome
        if isinstance(d, int):
            outcomes[i] = Outcome("unchanged", outcomes[d].id if outcomes[d] else "")
    late = [i for i, _, _, _ in new if i not in embedded]  # changed since the first read: embed now
    for i, vectors in zip(late, embed_memories(embedder, [rows[i].content for i in late],
                                               [rows[i].blocks for i in late])):
        embedded[i] = vectors
    positions = places.assign(conn, ns.path, [row.source for _, _, row, _ in new], kept)
    known = IndexReader(conn).visible_entities(Scope(ns))
    cursor = conn.connection.driver_connection.cursor()
    with cursor.copy("COPY memories (id, namespace, content, embedding, source, position, provenance, key,"
                     " supersedes, content_key) FROM STDIN") as cp:
        for (i, memory_id, row, supersedes), position in zip(new, positions):
            cp.write_row((memory_id, ns.path, row.content, _vector_text(embedded[i].vector), row.source, position,
                          json.dumps(row.provenance, ensure_ascii=False), row.key, supersedes, texts[i]))
    if any(embedded[i].passages for i, _, _, _ in new):
        with cursor.copy("COPY passages (memory_id, ordinal, embedding) FROM STDIN") as cp:
            for i, memory_id, _, _ in new:
                for ordinal, passage in enumerate(embedded[i].passages):
                    cp.write_row((memory_id, ordinal, _vector_text(passage)))
    if known:
        with cursor.copy("COPY mentions (memory_id, entity_id) FROM STDIN") as cp:
            for _, memory_id, row, _ in new:
                for entity_id in mentioned_entities(row.content, known):
                    cp.write_row((memory_id, entity_id))
    applied = Applied([o for o in outcomes if o is not None])
    lexicon.count(conn, added=applied.written, retired=[old for old, _ in applied.superseded])
    counts = {status: sum(o.status == status for o in applied.outcomes)
              for status in ("created", "superseded", "unchanged", "similar")}
    audit.append(conn, ns.path, "ingest", {"outcome": "ok", "rows": len(rows), "written": len(applied.written),
                                           **counts, "near_copies": sum(bool(o.similar) for o in applied.outcomes),
                                           "file": label}, request_id)
    return applied
