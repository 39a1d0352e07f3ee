"""What every write shares with `halomem reembed`'s swap (write.reembed).

A write embeds before its transaction opens. Inside the transaction it takes the swap lock shared
and reads the store's embedder (two statements: the read's snapshot comes after the lock); the swap
takes the lock exclusively. So a write either commits before the swap (the swap then re-embeds its
rows: they have no new vector yet) or sees the new embedder and is redone with it
(ActiveEmbedder.redo_on_swap): no vector of the wrong space is ever stored.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import meta
from ..embed.registry import EmbedderChanged

SWAP_LOCK = 0x6A10_0003  # beside MIGRATION_LOCK (0001) and audit.log.AUDIT_LOCK (0002)
_STORED = sa.select(meta.c.value).where(meta.c.key == "embedder")  # built once: every write reads it


def hold_store_embedder(conn: Connection, embedder_name: str) -> None:
    """Keep the store's embedder from changing until this transaction ends; EmbedderChanged when
    it is no longer ``embedder_name``."""
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock_shared({SWAP_LOCK})")
    stored = conn.execute(_STORED).scalar()
    if stored is not None and stored != embedder_name:
        raise EmbedderChanged(stored)


def lock_for_swap(conn: Connection) -> None:
    """The swap's side: wait for writes in flight, hold new ones until the swap commits."""
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SWAP_LOCK})")


def forget_shadow(conn: Connection, memory_id: str) -> None:
    """Erase's share: while a reembed runs, an erased row's vectors-in-waiting go with its vector."""
    if conn.exec_driver_sql("SELECT to_regclass('passages_next') IS NOT NULL").scalar():
        conn.exec_driver_sql("UPDATE memories SET embedding_next = NULL WHERE id = %s", (memory_id,))
        conn.exec_driver_sql("DELETE FROM passages_next WHERE memory_id = %s", (memory_id,))
