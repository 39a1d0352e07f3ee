"""remember, supersede, erase, entities, concepts: each one transaction with its audit row."""
from __future__ import annotations

import functools
import re
import secrets
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any, Callable, Sequence, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Connection

from .. import audit
from ..feedback import forget_notes
from ..audit.seen import forget_queries_that_returned
from ..cold import check_concept_path
from ..db.schema import PERSONAL_TEXT_TABLES, concepts, entities, entity_aliases, memories, passages, policies
from ..embed.passages import Embedded, embed_memories
from ..embed.registry import ActiveEmbedder
from ..embed.tokenize import word_boundary_pattern
from ..errors import ConflictError, InvalidInputError, NotFoundError
from ..index import IndexReader, Scope
from ..index.acl import mentionable
from ..limits import AUDITED_REASON_CHARS, check_entity_names
from ..policy.model import Policy, combine, parse_policy
from ..results import NewMemory
from ..types import Namespace
from . import chains, consolidate, lexicon, places
from .mentions import forget_mentions, mentioned_entities, record_mentions
from .validate import check_content, check_provenance, check_source
from .vector_swap import forget_shadow, hold_store_embedder

T = TypeVar("T")

def new_memory_id() -> str:
    return "m_" + uuid.uuid4().hex[:20]


def new_entity_id() -> int:
    """A random id (below 2**53, exact in any JSON reader): a sequence would tell every caller how
    many entities the whole store has registered, other organisations' included."""
    return secrets.randbits(53) or 1


def new_request_id() -> str:
    return uuid.uuid4().hex


def _redone_after_a_swap(method: Callable[..., T]) -> Callable[..., T]:
    """A write that embeds: redone once with the store's new embedder if a reembed swapped it."""
    @functools.wraps(method)
    def run(self: "Writer", *args: Any, **kwargs: Any) -> T:
        return self.embedders.redo_on_swap(lambda: method(self, *args, **kwargs))

    return run


# the live-or-closed facts of a namespace formed from any of the given turns (formation's provenance)
_DERIVED = sa.text("SELECT id FROM memories WHERE namespace = :ns AND erased_at IS NULL"
                   " AND provenance -> 'turn_ids' ?| CAST(:ids AS text[])")


class Writer:
    def __init__(self, engine: sa.Engine, embedders: ActiveEmbedder) -> None:
        self.engine = engine
        self.embedders = embedders

    # --- L2 rows -----------------------------------------------------------------------------
    @_redone_after_a_swap
    def remember(self, ns: Namespace, content: str, *, source: str | None = None,
                 provenance: dict[str, Any] | None = None, request_id: str | None = None) -> NewMemory:
        """Write one memory, consolidated (write.consolidate): the same text already live in ``ns`` is
        answered with its id (``unchanged``), a near-copy is named beside the new id (or, under
        ``consolidate: skip-similar``, answered instead of written)."""
        request_id = request_id or new_request_id()
        content, source = check_content(content), check_source(source)
        provenance = check_provenance(provenance)
        key = consolidate.content_key(content)
        with self.engine.connect() as conn:  # the policy and the same text, before embedding
            mode = self._consolidation(conn, ns)
            existing = consolidate.live_with_keys(conn, ns.path, [key]).get(key) if mode != consolidate.OFF else None
        if existing is not None:
            return self._not_written(ns, "unchanged", existing, (), request_id)
        [embedded] = embed_memories(self.embedders.current, [content])
        similar: tuple[consolidate.Similar, ...] = ()
        if mode != consolidate.OFF:
            similar = self._near_copies(ns, content, embedded)
            if similar and mode == consolidate.SKIP_SIMILAR:
                return self._not_written(ns, "similar", similar[0].id, similar, request_id)
        memory_id = new_memory_id()
        with self.engine.begin() as conn:
            hold_store_embedder(conn, embedded.by)
            if mode != consolidate.OFF:  # a racing writer of the same text: one row, not two
                consolidate.lock_texts(conn, ns.path, [key])
                existing = consolidate.live_with_keys(conn, ns.path, [key]).get(key)
                if existing is not None:
                    audit.append(conn, ns.path, "remember", {"outcome": "unchanged", "id": existing}, request_id)
                    return NewMemory(existing, ns.path, source, request_id, "unchanged")
            [position] = places.assign(conn, ns.path, [source])
            self._insert(conn, ns, memory_id, content, embedded, source, position, provenance, supersedes=None)
            lexicon.count(conn, added=[memory_id])
            audit.append(conn, ns.path, "remember", {"outcome": "ok", "id": memory_id,  # ids only: erasable data stays out
                                                     "similar": [s.id for s in similar]}, request_id)
        return NewMemory(memory_id, ns.path, source, request_id, "created", similar)

    def consolidation(self, ns: Namespace) -> str:
        """The namespace's ``consolidate`` policy facet (policy.model): off, report or skip-similar."""
        with self.engine.connect() as conn:
            return self._consolidation(conn, ns)

    @staticmethod
    def _consolidation(conn: Connection, ns: Namespace) -> str:
        from ..policy.store import effective_policy

        return effective_policy(conn, ns).consolidation

    def _near_copies(self, ns: Namespace, content: str, embedded: Embedded) -> tuple[consolidate.Similar, ...]:
        from ..embed.calibrate import noise_floor

        with self.engine.connect() as conn:
            conn.exec_driver_sql(consolidate.NEAR_SETTINGS)
            [found] = consolidate.near_copies(conn, ns.path, [(content, embedded.vector, ())],
                                              noise_floor(self.embedders.current))
        return tuple(found)

    def _not_written(self, ns: Namespace, status: str, memory_id: str, similar: tuple[consolidate.Similar, ...],
                     request_id: str) -> NewMemory:
        """A remember that wrote nothing, with the audit row that says why."""
        with self.engine.begin() as conn:
            audit.append(conn, ns.path, "remember", {"outcome": status, "id": memory_id,
                                                     "similar": [s.id for s in similar]}, request_id)
        return NewMemory(memory_id, ns.path, None, request_id, status, similar)

    def _prepare(self, content: str, source: str | None, provenance: dict[str, Any] | None
                 ) -> tuple[str, str | None, dict[str, Any], Embedded]:
        """Validate a new row's fields and embed it (and its passages), before any transaction opens."""
        content, source = check_content(content), check_source(source)
        provenance = check_provenance(provenance)
        [embedded] = embed_memories(self.embedders.current, [content])
        return content, source, provenance, embedded

    def _insert(self, conn: Connection, ns: Namespace, memory_id: str, content: str, embedded: Embedded,
                source: str | None, position: int | None, provenance: dict[str, Any],
                supersedes: str | None) -> None:
        conn.execute(memories.insert().values(
            id=memory_id, namespace=ns.path, content=content, embedding=list(embedded.vector), source=source,
            position=position, provenance=provenance, supersedes=supersedes, content_key=consolidate.content_key(content),
            t_valid_from=sa.func.now()))
        if embedded.passages:
            conn.execute(passages.insert(), [{"memory_id": memory_id, "ordinal": i, "embedding": list(v)}
                                             for i, v in enumerate(embedded.passages)])
        known = IndexReader(conn).visible_entities(Scope(ns))
        record_mentions(conn, ((memory_id, e) for e in mentioned_entities(content, known)))

    @_redone_after_a_swap
    def supersede(self, ns: Namespace, old_id: str, content: str, *, source: str | None = None,
                  provenance: dict[str, Any] | None = None, request_id: str | None = None) -> NewMemory:
        """Close ``old_id``'s validity and link a new head, atomically; exactly one racer wins."""
        content, source, provenance, embedded = self._prepare(content, source, provenance)
        memory_id = new_memory_id()
        with self.engine.begin() as conn:
            hold_store_embedder(conn, embedded.by)
            closed = chains.close_head(conn, ns, old_id, memory_id)
            if closed is None:
                self._explain_not_head(conn, ns, old_id)
            source = chains.successor_source(source, closed)
            [position] = places.assign(conn, ns.path, [source], [chains.successor_place(source, closed)])
            self._insert(conn, ns, memory_id, content, embedded, source, position, provenance, supersedes=old_id)
            lexicon.count(conn, added=[memory_id], retired=[old_id])
            audit.append(conn, ns.path, "supersede", {"outcome": "ok", "old": old_id, "new": memory_id},
                         request_id or new_request_id())
        return NewMemory(memory_id, ns.path, source)

    @staticmethod
    def _explain_not_head(conn: Connection, ns: Namespace, old_id: str) -> None:
        row = IndexReader(conn).fetch(Scope(ns), [old_id], live=False).get(old_id)
        if row is None or row.namespace != ns.path:
            raise NotFoundError(f"no memory {old_id!r} in namespace {ns}")
        if row.erased_at is not None:
            raise ConflictError(f"memory {old_id} was erased; it cannot be superseded")
        last = IndexReader(conn).history(Scope(ns), old_id)[-1]  # the chain's newest version
        if last.erased_at is not None:
            raise ConflictError(f"memory {old_id} is not a head: its chain was ended by erasing {last.id}"
                                f" on {last.erased_at:%Y-%m-%d %H:%M:%S} UTC; remember a new memory instead")
        raise ConflictError(f"memory {old_id} is no longer the head of its chain: supersede its current head {last.id}")

    def retire(self, ns: Namespace, ids: Sequence[str], *, reason: str, request_id: str | None = None,
               lived: timedelta | None = None) -> list[str]:
        """Close the validity of live memories of ``ns`` with no successor (write.chains.retire_heads;
        ``lived``: a ttl), with one audit row naming them and why; returns the ids closed (a row no
        longer live is left)."""
        with self.engine.begin() as conn:
            closed = chains.retire_heads(conn, ns, sorted(set(ids)), lived)
            if closed:
                lexicon.count(conn, retired=closed)
                audit.append(conn, ns.path, "retire", {"outcome": "ok", "ids": closed, "reason": reason},
                             request_id or new_request_id())
        return closed

    def erase(self, ns: Namespace, memory_id: str, *, reason: str = "", chain: bool = False,
              request_id: str | None = None) -> list[str]:
        """Remove content and vector for good; keep a content-free tombstone and an audit row. With
        ``chain``, every version of ``memory_id``'s supersedence chain in one transaction (an erased
        head would otherwise leave its earlier values readable in history and as-of). The facts a
        chat model formed from an erased turn (formation: provenance ``turn_ids``) are erased with
        it: what was said is gone from what was made of it too. Returns the ids erased now."""
        with self.engine.begin() as conn:
            row = IndexReader(conn).fetch(Scope(ns), [memory_id], live=False).get(memory_id)
            if row is None or row.namespace != ns.path:
                raise NotFoundError(f"no memory {memory_id!r} in namespace {ns}")
            ids = [r.id for r in IndexReader(conn).history(Scope(ns), memory_id) if r.namespace == ns.path] \
                if chain else [memory_id]
            derived = sorted(conn.execute(_DERIVED, {"ns": ns.path, "ids": ids}).scalars())
            ids += derived
            targets = sorted(conn.execute(  # lock the rows, and take them out of the lexicon while they have content
                sa.select(memories.c.id).where(
                    memories.c.id.in_(ids), memories.c.namespace == ns.path, memories.c.erased_at.is_(None))
                .with_for_update()).scalars())
            if not targets:
                raise ConflictError(f"memory {memory_id} is already erased" + (" (every version)" if chain else ""))
            lexicon.erase(conn, targets)
            conn.execute(
                sa.update(memories)
                .where(memories.c.id.in_(targets), memories.c.namespace == ns.path, memories.c.erased_at.is_(None))
                .values(content="", embedding=None, source=None, position=None, key=None, content_key=None,
                        erased_at=sa.func.now(),
                        t_valid_to=sa.func.coalesce(memories.c.t_valid_to, sa.func.now()),
                        provenance=sa.text("'{}'::jsonb")))
            for erased in targets:
                forget_mentions(conn, erased)
                forget_shadow(conn, erased)
            conn.execute(sa.delete(passages).where(passages.c.memory_id.in_(targets)))
            forget_queries_that_returned(conn, targets)  # a query that found one may quote it
            forget_notes(conn, targets)  # and so may a note left on one
            record = {"outcome": "ok", "id": memory_id, "reason": reason[:AUDITED_REASON_CHARS]}
            if chain:
                record["chain"] = [t for t in targets if t not in derived]
            if derived:
                record["derived"] = derived
            audit.append(conn, ns.path, "erase", record, request_id or new_request_id())
        return targets

    # --- entities ----------------------------------------------------------------------------
    def add_entity(self, ns: Namespace, name: str, aliases: Sequence[str] = (), *,
                   request_id: str | None = None) -> tuple[int, int]:
        """Register (or extend) an entity and link the rows that mention it (``acl.mentionable``).

        Returns (id, linked): ``linked`` counts only the linked rows the caller may read (its own
        namespace's), never a descendant's, so the answer depends on nothing outside its read ACL.
        """
        names = check_entity_names(name, aliases)
        if not all(names):
            raise InvalidInputError("entity names and aliases must not be blank")
        with self.engine.begin() as conn:
            existing = conn.execute(sa.select(entities.c.id).where(
                entities.c.namespace == ns.path, sa.func.lower(entities.c.name) == names[0].lower())).scalar()
            entity_id = existing or conn.execute(
                entities.insert().values(id=new_entity_id(), namespace=ns.path, name=names[0])
                .returning(entities.c.id)).scalar_one()
            for alias in dict.fromkeys(n for n in names[1:] if n.lower() != names[0].lower()):
                conn.execute(insert(entity_aliases).values(entity_id=entity_id, alias=alias).on_conflict_do_nothing())
            linked = self._link_existing(conn, ns, entity_id, names)
            audit.append(conn, ns.path, "entity", {"outcome": "ok", "id": entity_id, "aliases": len(names) - 1,
                                                   "linked": linked},
                         request_id or new_request_id())  # ids and counts: names are personal data
        return entity_id, linked

    @staticmethod
    def _link_existing(conn: Connection, ns: Namespace, entity_id: int, names: Sequence[str]) -> int:
        """Link every mentionable row naming the entity; return how many of them ``ns`` may read."""
        prefilter = "|".join(re.escape(n) for n in names)
        rows = conn.execute(sa.select(memories.c.id, memories.c.namespace, memories.c.content).where(
            mentionable(memories, ns), memories.c.content.op("~*")(prefilter)))
        patterns = [word_boundary_pattern(n) for n in names]
        hits = [(r.id, r.namespace) for r in rows if any(p.search(r.content) for p in patterns)]
        record_mentions(conn, ((memory_id, entity_id) for memory_id, _ in hits))
        readable = set(ns.lineage())
        return sum(1 for _, owner in hits if owner in readable)

    # --- L3 concepts -------------------------------------------------------------------------
    @_redone_after_a_swap
    def put_concept(self, ns: Namespace, path: str, content: str, *, request_id: str | None = None) -> None:
        path = check_concept_path(path)
        content = check_content(content)
        embedder = self.embedders.current
        [embedding] = embedder.embed([path + " " + content])
        stmt = insert(concepts).values(namespace=ns.path, path=path, content=content, embedding=embedding)
        stmt = stmt.on_conflict_do_update(index_elements=[concepts.c.namespace, concepts.c.path],
                                          set_={"content": content, "embedding": embedding,
                                                "updated_at": sa.func.now(), "materialized_id": None})
        with self.engine.begin() as conn:
            hold_store_embedder(conn, embedder.name)
            conn.execute(stmt)
            audit.append(conn, ns.path, "concept", {"outcome": "ok", "path": path}, request_id or new_request_id())

    def materialize_concept(self, ns: Namespace, path: str, *, request_id: str | None = None) -> NewMemory:
        """Copy an L3 concept into L2 as a memory of ``ns`` with provenance pointing at the concept.
        Idempotent: while ``ns`` holds a live copy of the concept's current text, that copy is the
        answer (no duplicate row)."""
        request_id = request_id or new_request_id()
        source = f"concept:{path}"
        with self.engine.connect() as conn:
            concept = IndexReader(conn).concept(Scope(ns), path)
            if concept is None:
                raise NotFoundError(f"no concept {path!r} visible from {ns}")
            existing = conn.execute(sa.select(memories.c.id).where(
                memories.c.namespace == ns.path, memories.c.source == source,
                memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None),
                memories.c.content == concept["content"],
                memories.c.provenance["concept_ns"].astext == concept["namespace"]).limit(1)).scalar()
        if existing is not None:
            with self.engine.begin() as conn:
                audit.append(conn, ns.path, "concept", {"outcome": "unchanged", "materialized": existing}, request_id)
            return NewMemory(existing, ns.path, source, request_id)
        made = self.remember(ns, concept["content"], source=source,
                             provenance={"concept": path, "concept_ns": concept["namespace"]},
                             request_id=request_id)
        if concept["namespace"] == ns.path:
            with self.engine.begin() as conn:
                conn.execute(sa.update(concepts).where(concepts.c.namespace == ns.path, concepts.c.path == path)
                             .values(materialized_id=made.id))
        return replace(made, request_id=request_id)

    def set_policies(self, items: Sequence[tuple[Namespace, dict[str, Any]]], *, request_id: str | None = None,
                     replace: bool = False) -> list[Policy]:
        """Set several namespaces' policies in one transaction: all of them or none (one audit row each,
        naming the namespace's whole own policy after the change). Each item sets the facets it names
        and keeps the namespace's others (policy.model.combine), unless ``replace``."""
        request_id = request_id or new_request_id()
        made = []
        with self.engine.begin() as conn:
            for ns, wanted in items:
                own = None if replace else conn.execute(sa.select(policies.c.policy).where(
                    policies.c.namespace == ns.path).with_for_update()).scalar()
                policy = parse_policy(combine(own, wanted), ns.path).to_dict()
                stmt = insert(policies).values(namespace=ns.path, policy=policy)
                conn.execute(stmt.on_conflict_do_update(index_elements=[policies.c.namespace],
                                                        set_={"policy": policy, "updated_at": sa.func.now()}))
                audit.append(conn, ns.path, "policy", {"outcome": "ok", "policy": policy}, request_id)
                made.append(parse_policy(policy, ns.path))
        return made

    def purge(self, *, request_id: str | None = None) -> list[str]:
        """Rewrite the tables that can hold personal text (db.schema.PERSONAL_TEXT_TABLES) so no erased
        content survives in live heap, TOAST or index files (VACUUM FULL: a short exclusive lock), then
        checkpoint. WAL and backups are not touched.
        Idempotent: it rewrites whatever is there, however often it runs.

        The planner's statistics are data too: ANALYZE keeps sample values (common lexemes, short
        texts) in pg_statistic. They are recomputed from the remaining rows, and pg_statistic is
        rewritten so the old samples leave its file.

        Under a least-privilege owner role (managed PostgreSQL) the last two steps may not be
        allowed; they are skipped and returned as sentences saying what was not done and which
        privilege would do it (the audit row lists them too).
        """
        tables = PERSONAL_TEXT_TABLES
        not_done: list[str] = []
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for table in tables:
                conn.exec_driver_sql(f"VACUUM (FULL, ANALYZE) {table}")
            may = conn.exec_driver_sql(
                "SELECT r.rolsuper OR d.datdba = r.oid, r.rolsuper OR pg_has_role(r.oid, 'pg_checkpoint', 'MEMBER')"
                " FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()"
            ).one()
            if may[0]:
                conn.exec_driver_sql("VACUUM (FULL) pg_catalog.pg_statistic")
            else:
                not_done.append("pg_statistic was not rewritten (needs the database's owner or a superuser): "
                                "old planner samples stay in its file until the next VACUUM FULL of it")
            if may[1]:
                conn.exec_driver_sql("CHECKPOINT")
            else:
                not_done.append("no CHECKPOINT (needs the pg_checkpoint role): the rewritten files replace the "
                                "old ones on disk at the server's next checkpoint")
        with self.engine.begin() as conn:
            audit.append(conn, audit.STORE_NS, "purge",
                         {"outcome": "ok", "tables": [*tables, *(["pg_statistic"] if may[0] else [])],
                          "checkpoint": bool(may[1]), "skipped": len(not_done)}, request_id or new_request_id())
        return not_done

    def clear_policy(self, ns: Namespace, *, request_id: str | None = None) -> bool:
        with self.engine.begin() as conn:
            gone = conn.execute(sa.delete(policies).where(policies.c.namespace == ns.path)).rowcount
            audit.append(conn, ns.path, "policy", {"outcome": "cleared"}, request_id or new_request_id())
        return bool(gone)

