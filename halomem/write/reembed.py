"""`halomem reembed`: change a live store's embedder without stopping it.

The new vectors are built beside the old ones (memories.embedding_next, concepts.embedding_next,
passages_next), in committed batches: a SIGKILL loses at most one batch and a rerun with the same
embedder resumes where the last one stopped. Their HNSW indexes are built before the swap. Searches
and writes meanwhile use the old vectors. The swap is one transaction: it takes the swap lock
first (writes hold it shared, so none is half way: write.vector_swap), catches up the rows written
since, renames the new columns, table and indexes over the old ones, records the new
embedder and appends one audit row. Every kernel reads the store's embedder in each search's
snapshot and before each write (embed.registry.ActiveEmbedder), so a search ranks with exactly one
embedder's vectors, before or after, and a running server follows the swap.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import audit
from ..db import migrations
from ..db.schema import meta, namespace_index_names
from ..embed import Embedder
from ..embed.passages import embed_memories
from ..errors import ConflictError
from .vector_swap import lock_for_swap
from .writer import new_request_id

TARGET_KEY = "reembed_target"
NEXT_INDEX = "memories_embedding_next_idx"
NEXT_PASSAGE_INDEX = "passages_next_embedding_idx"


@dataclass
class Reembedded:
    """What a reembed did (one shape for the CLI's text and --json)."""

    old: str
    new: str
    memories: int
    passages: int
    concepts: int
    resumed: bool
    request_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.old, "to": self.new, "memories": self.memories, "passages": self.passages,
                "concepts": self.concepts, "resumed": self.resumed, "request_id": self.request_id}


def in_progress(conn: Connection) -> str | None:
    """The embedder a reembed is building vectors for ("name/dim"), or None."""
    return conn.execute(sa.select(meta.c.value).where(meta.c.key == TARGET_KEY)).scalar()


def _vector(v: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def _identity(embedder: Embedder) -> str:
    return f"{embedder.name}/{embedder.dim}"


def _drop_shadow(conn: Connection) -> None:
    conn.exec_driver_sql("DROP TABLE IF EXISTS passages_next")
    for table in ("memories", "concepts"):
        conn.exec_driver_sql(f"ALTER TABLE {table} DROP COLUMN IF EXISTS embedding_next")
    conn.execute(sa.delete(meta).where(meta.c.key == TARGET_KEY))


def _prepare(engine: sa.Engine, target: Embedder) -> bool:
    """Make (or find) the shadow columns and table for ``target``; True when resuming."""
    with engine.begin() as conn:
        found = in_progress(conn)
        if found == _identity(target):
            return True
        if found is not None:
            _drop_shadow(conn)  # a reembed to another embedder was left behind: start over
        dim = int(target.dim)
        for table in ("memories", "concepts"):
            conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN embedding_next vector({dim})")
        conn.exec_driver_sql(
            f"CREATE TABLE passages_next (memory_id text NOT NULL REFERENCES memories(id) ON DELETE CASCADE,"
            f" ordinal integer NOT NULL, embedding vector({dim}) NOT NULL, PRIMARY KEY (memory_id, ordinal))")
        conn.execute(sa.insert(meta).values(key=TARGET_KEY, value=_identity(target)))
    return False


_PENDING = ("FROM memories WHERE embedding_next IS NULL AND erased_at IS NULL AND content <> ''")


def pending(conn: Connection) -> tuple[int, int]:
    """(memories, concepts) still without a new vector."""
    rows = conn.exec_driver_sql(f"SELECT count(*) {_PENDING}").scalar()
    concepts = conn.exec_driver_sql("SELECT count(*) FROM concepts WHERE embedding_next IS NULL").scalar()
    return int(rows), int(concepts)


def _fill_batch(conn: Connection, target: Embedder, limit: int | None) -> tuple[int, int]:
    """Embed up to ``limit`` pending memories (all of them when None) in ``conn``'s transaction;
    returns (memories, passages) written."""
    rows = conn.exec_driver_sql(f"SELECT id, content {_PENDING} ORDER BY id"
                                + (f" LIMIT {int(limit)}" if limit else "")).all()
    if not rows:
        return 0, 0
    embedded = embed_memories(target, [r.content for r in rows])
    cursor = conn.connection.driver_connection.cursor()
    with cursor.copy("COPY passages_next (memory_id, ordinal, embedding) FROM STDIN") as cp:
        for r, e in zip(rows, embedded):
            for ordinal, passage in enumerate(e.passages):
                cp.write_row((r.id, ordinal, _vector(passage)))
    # only rows still live: an erase that committed while this batch embedded has taken their vector
    # and passages, so none are written back for them (the UPDATE then locks the rest: an erase
    # after it waits for this commit and removes what it wrote, write.vector_swap.forget_shadow)
    updated = set(conn.execute(sa.text(
        "UPDATE memories AS m SET embedding_next = CAST(v.vec AS vector) FROM"
        " unnest(CAST(:ids AS text[]), CAST(:vecs AS text[])) AS v(id, vec)"
        " WHERE m.id = v.id AND m.erased_at IS NULL RETURNING m.id"),
        {"ids": [r.id for r in rows], "vecs": [_vector(e.vector) for e in embedded]}).scalars())
    gone = [r.id for r in rows if r.id not in updated]
    if gone:
        conn.execute(sa.text("DELETE FROM passages_next WHERE memory_id = ANY(CAST(:ids AS text[]))"), {"ids": gone})
    return len(updated), sum(len(e.passages) for r, e in zip(rows, embedded) if r.id in updated)


def _fill_concepts(conn: Connection, target: Embedder) -> int:
    rows = conn.exec_driver_sql("SELECT namespace, path, content FROM concepts WHERE embedding_next IS NULL").all()
    if rows:
        vectors = target.embed([r.path + " " + r.content for r in rows])  # as Writer.put_concept embeds
        conn.execute(sa.text("UPDATE concepts SET embedding_next = CAST(:vec AS vector)"
                             " WHERE namespace = :ns AND path = :path"),
                     [{"vec": _vector(v), "ns": r.namespace, "path": r.path} for r, v in zip(rows, vectors)])
    return len(rows)


def _build_indexes(engine: sa.Engine) -> list[tuple[str, str]]:
    """The new vectors' HNSW indexes, before the swap (writes go on; CONCURRENTLY). Returns
    (new index, the old one it replaces) pairs, namespace indexes included."""
    pairs = [(NEXT_INDEX, migrations.VECTOR_INDEX), (NEXT_PASSAGE_INDEX, migrations.PASSAGE_INDEX)]
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("SET maintenance_work_mem = '512MB'")
        targets = [(NEXT_INDEX, "memories", "embedding_next", ""),
                   (NEXT_PASSAGE_INDEX, "passages_next", "embedding", "")]
        for ns in migrations.namespace_indexes(conn):
            vec, _ = namespace_index_names(ns)
            name = f"{vec}_next"[:63]
            targets.append((name, "memories", "embedding_next",
                            f" WHERE namespace = '{ns}' AND t_valid_to IS NULL AND erased_at IS NULL"))
            pairs.append((name, vec))
        for name, table, column, where in targets:
            if not migrations.valid_indexes(conn, [name]):  # an earlier run killed mid-build leaves it invalid
                conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
                conn.exec_driver_sql(f"CREATE INDEX CONCURRENTLY {name} ON {table} USING hnsw"
                                     f" ({column} vector_cosine_ops){where}")
    return pairs


def _swap(engine: sa.Engine, target: Embedder, pairs: list[tuple[str, str]], request_id: str) -> tuple[str, dict[str, int]]:
    with engine.begin() as conn:
        lock_for_swap(conn)  # writes in flight finish first; new ones wait, then see the new embedder
        old = conn.execute(sa.select(meta.c.value).where(meta.c.key == "embedder")).scalar()
        old_dim = conn.execute(sa.select(meta.c.value).where(meta.c.key == "embedding_dim")).scalar()
        conn.exec_driver_sql("LOCK TABLE memories, concepts, passages, passages_next IN SHARE ROW EXCLUSIVE MODE")
        _fill_batch(conn, target, None)  # the rows written since the last batch
        _fill_concepts(conn, target)
        conn.exec_driver_sql("UPDATE memories SET embedding_next = NULL WHERE erased_at IS NOT NULL"
                             " AND embedding_next IS NOT NULL")
        conn.exec_driver_sql("DELETE FROM passages_next p USING memories m"  # erasure wins, whatever raced
                             " WHERE p.memory_id = m.id AND m.erased_at IS NOT NULL")
        counts = {name: int(conn.exec_driver_sql(sql).scalar()) for name, sql in (
            ("memories", "SELECT count(*) FROM memories WHERE embedding_next IS NOT NULL"),
            ("passages", "SELECT count(*) FROM passages_next"),
            ("concepts", "SELECT count(*) FROM concepts WHERE embedding_next IS NOT NULL"))}
        for _, replaced in pairs:
            conn.exec_driver_sql(f"DROP INDEX IF EXISTS {replaced}")
        conn.exec_driver_sql("ALTER TABLE memories DROP COLUMN embedding")
        conn.exec_driver_sql("ALTER TABLE memories RENAME COLUMN embedding_next TO embedding")
        conn.exec_driver_sql("ALTER TABLE concepts DROP COLUMN embedding")
        conn.exec_driver_sql("ALTER TABLE concepts RENAME COLUMN embedding_next TO embedding")
        conn.exec_driver_sql("DROP TABLE passages")
        conn.exec_driver_sql("ALTER TABLE passages_next RENAME TO passages")
        conn.exec_driver_sql("ALTER TABLE passages RENAME CONSTRAINT passages_next_pkey TO passages_pkey")
        conn.exec_driver_sql("ALTER TABLE passages RENAME CONSTRAINT passages_next_memory_id_fkey"
                             " TO passages_memory_id_fkey")
        for new, replaced in pairs:
            conn.exec_driver_sql(f"ALTER INDEX {new} RENAME TO {replaced}")
            if replaced.startswith("memories_ns_vec_"):
                comment = conn.exec_driver_sql(  # the namespace it serves, as create_namespace_indexes wrote it
                    "SELECT obj_description(to_regclass(%s), 'pg_class')", (replaced.replace("_vec_", "_tsv_"),)).scalar()
                conn.exec_driver_sql(f"COMMENT ON INDEX {replaced} IS '{comment}'")
        migrations.grant_reader(conn)
        for key, value in (("embedder", target.name), ("embedding_dim", str(target.dim))):
            conn.execute(sa.update(meta).where(meta.c.key == key).values(value=value))
        conn.execute(sa.delete(meta).where(meta.c.key == TARGET_KEY))
        frm = f"{old}/{old_dim}"
        audit.append(conn, audit.STORE_NS, "reembed", {"outcome": "ok", "from": frm, "to": _identity(target), **counts},
                     request_id)
    return frm, counts


def reembed(engine: sa.Engine, target: Embedder, *, batch: int = 256,
            on_total: Callable[[int], None] | None = None, progress: Callable[[int], None] | None = None,
            on_index: Callable[[], None] | None = None, request_id: str | None = None) -> Reembedded:
    """Re-embed every live memory, passage and concept with ``target``, then swap (module doc)."""
    request_id = request_id or new_request_id()
    with engine.connect() as conn:
        stored = {k: v for k, v in conn.execute(sa.select(meta.c.key, meta.c.value))}
    if (stored.get("embedder"), stored.get("embedding_dim")) == (target.name, str(target.dim)):
        raise ConflictError(f"the store already uses embedder {_identity(target)}-d: nothing to re-embed")
    resumed = _prepare(engine, target)
    with engine.connect() as conn:
        total, _ = pending(conn)
    if on_total:
        on_total(total)
    while True:
        with engine.begin() as conn:
            written, _ = _fill_batch(conn, target, batch)
        if not written:
            break
        if progress:
            progress(written)
    with engine.begin() as conn:
        _fill_concepts(conn, target)
    if on_index:
        on_index()
    pairs = _build_indexes(engine)
    old, counts = _swap(engine, target, pairs, request_id)
    return Reembedded(old, _identity(target), counts["memories"], counts["passages"], counts["concepts"], resumed,
                      request_id)
