"""Import: an export (halomem.portable) loaded in one transaction, all or nothing.

Ids, chains and validity times are kept; each text is embedded with this store's embedder; the
lexicon and its history are counted at each version's own instants (as-of statistics hold);
mentions are linked; a record already here and identical is skipped (a re-import writes nothing),
one that differs refuses the whole import, as does a record outside the namespace the export's
header names. Every field of every record is checked before anything is written.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterable

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from .. import audit
from ..db.schema import concepts, entities, entity_aliases, memories, passages, policies
from ..embed.passages import embed_memories
from ..auth.rights import within
from ..errors import ConflictError, InvalidInputError, PermissionDeniedError
from ..index.acl import in_subtree
from ..policy.model import parse_policy
from ..texts import content_key
from ..types import Namespace
from . import lexicon
from .mentions import mentioned_entities, record_mentions
from .writer import new_entity_id, new_request_id

FORMAT = "halomem-export/1"
MEMORY_FIELDS = ("id", "namespace", "content", "source", "position", "provenance", "key", "tier", "t_valid_from",
                 "t_valid_to", "supersedes", "superseded_by", "erased_at")
EMBED_BATCH = 256


def _records(lines: Iterable[bytes | str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, records = None, []
    for number, raw in enumerate(lines, 1):
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            if not text.strip():
                continue
            record = json.loads(text)
        except ValueError:  # UnicodeDecodeError included: an export is UTF-8 JSON lines
            raise InvalidInputError(f"line {number}: not a JSON line in UTF-8") from None
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            raise InvalidInputError(f"line {number}: not an export record (no kind)")
        if header is None:
            if record.get("kind") != "header" or record.get("format") != FORMAT:
                raise InvalidInputError(f"not a halomem export (its first line is no {FORMAT} header)")
            header = record
            continue
        if record["kind"] not in ("memory", "entity", "concept", "policy"):
            raise InvalidInputError(f"line {number}: unknown kind {str(record['kind'])[:40]!r}")
        record["line"] = number
        records.append(record)
    if header is None:
        raise InvalidInputError("not a halomem export (empty)")
    return header, records


def covered(column: sa.ColumnElement[str], root: Namespace, subtree: bool) -> sa.ColumnElement[bool]:
    """The rows an export of ``root`` (with ``subtree``: and below) holds, as SQL (portable exports them)."""
    return in_subtree(column, root) if subtree else column == root.path


def _check(record: dict[str, Any], root: Namespace, subtree: bool) -> Namespace:
    """The record's namespace, refused outside what the export's header names."""
    try:
        ns = Namespace(str(record.get("namespace")))
    except (ValueError, InvalidInputError):
        raise InvalidInputError(f"line {record['line']}: malformed namespace") from None
    if not (within(ns, root) if subtree else ns.path == root.path):
        raise InvalidInputError(f"line {record['line']}: namespace {ns} is outside the export's {root}")
    return ns


def import_lines(engine: sa.Engine, embedder: Any, lines: Iterable[bytes | str], *,
                 request_id: str | None = None, only: Namespace | None = None) -> dict[str, int]:
    """Load an export (module doc); returns counts of what was written and skipped. ``only``: the
    export must be of that namespace alone (an admin's own, over the API)."""
    header, records = _records(lines)
    if only is not None and (header.get("namespace") != only.path or header.get("subtree")):
        raise PermissionDeniedError(f"this export is of {str(header.get('namespace'))[:100]}"
                                    f"{' and below' if header.get('subtree') else ''}: a token of {only} imports"
                                    f" exports of {only} alone")
    try:
        root = Namespace(str(header.get("namespace")))
    except (ValueError, InvalidInputError):
        raise InvalidInputError("the export's header names no valid namespace") from None
    subtree = bool(header.get("subtree"))
    for record in records:
        _check(record, root, subtree)
    rows = [_memory(r) for r in records if r["kind"] == "memory"]
    counts = {"memories": 0, "unchanged": 0, "entities": 0, "concepts": 0, "policies": 0}
    request_id = request_id or new_request_id()
    try:
        _load(engine, embedder, root, subtree, records, rows, counts, request_id)
    except sa.exc.IntegrityError as exc:  # a key live twice, a chain link to nowhere: the store is untouched
        raise ConflictError(f"the export conflicts with this store ({type(exc.orig).__name__}): nothing was"
                            " imported") from None
    return counts


def _load(engine: sa.Engine, embedder: Any, root: Namespace, subtree: bool, records: list[dict[str, Any]],
          rows: list[dict[str, Any]], counts: dict[str, int], request_id: str) -> None:
    """import_lines' one transaction."""
    with engine.begin() as conn:
        existing = {row.id: row for row in conn.execute(  # an id elsewhere: the insert's conflict says so
            sa.select(*(memories.c[f] for f in MEMORY_FIELDS)).where(
                covered(memories.c.namespace, root, subtree), memories.c.id.in_([r["id"] for r in rows])))}
        new = []
        for r in rows:
            have = existing.get(r["id"])
            if have is None:
                new.append(r)
                continue
            same = all(_same(getattr(have, f), r.get(f)) for f in MEMORY_FIELDS)
            if not same:
                raise ConflictError(f"line {r['line']}: memory {r['id']} exists here and differs: nothing was imported")
            counts["unchanged"] += 1
        texts = [r for r in new if r.get("erased_at") is None]
        vectors: dict[str, Any] = {}
        for start in range(0, len(texts), EMBED_BATCH):
            batch = texts[start:start + EMBED_BATCH]
            for r, made in zip(batch, embed_memories(embedder, [r["content"] for r in batch])):
                vectors[r["id"]] = made
        for r in new:
            made = vectors.get(r["id"])
            kept = r.get("erased_at") is None  # a tombstone keeps ids, times and links, nothing else
            conn.execute(memories.insert().values(
                id=r["id"], namespace=r["namespace"], content=r.get("content") or "", source=r.get("source"),
                position=r.get("position"), provenance=r.get("provenance") or {}, key=r.get("key"),
                tier=r.get("tier") or "L2", t_valid_from=datetime.fromisoformat(r["t_valid_from"]),
                t_valid_to=datetime.fromisoformat(r["t_valid_to"]) if r.get("t_valid_to") else None,
                supersedes=r.get("supersedes"), superseded_by=r.get("superseded_by"),
                erased_at=datetime.fromisoformat(r["erased_at"]) if r.get("erased_at") else None,
                content_key=content_key(r["content"]) if kept else None,
                embedding=made.vector if made is not None else None))
            if made is not None and made.passages:
                conn.execute(passages.insert(), [{"memory_id": r["id"], "ordinal": i, "embedding": p}
                                                 for i, p in enumerate(made.passages)])
        counts["memories"] = len(new)
        # the lexicon and its history, at each version's own instants (as-of statistics hold)
        lexicon.count(conn, added=[r["id"] for r in texts],
                      retired=[r["id"] for r in texts if r.get("t_valid_to")])
        counts["entities"] = _entities(conn, [r for r in records if r["kind"] == "entity"])
        counts["concepts"] = _concepts(conn, embedder, [r for r in records if r["kind"] == "concept"])
        counts["policies"] = _policies(conn, [r for r in records if r["kind"] == "policy"])
        _mentions(conn, [r for r in texts if r.get("t_valid_to") is None])
        audit.append(conn, root.path, "import", {"outcome": "ok", **counts, "subtree": subtree}, request_id)


def _instant(r: dict[str, Any], field: str, required: bool = False) -> str | None:
    value = r.get(field)
    if value is None and not required:
        return None
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise InvalidInputError(f"line {r['line']}: {field} must be an ISO 8601 instant with its offset")
    return value


def _memory(r: dict[str, Any]) -> dict[str, Any]:
    """A memory record checked field by field (a hostile file is refused, never half-read)."""
    from ..limits import MAX_ID_CHARS, MAX_KEY_CHARS, check_text
    from .validate import check_content, check_provenance, check_source

    where = f"line {r['line']}"
    for field in ("id", "supersedes", "superseded_by"):
        value = r.get(field)
        if (value is not None or field == "id") and (not isinstance(value, str) or not 0 < len(value) <= MAX_ID_CHARS
                                                     or not value.isprintable()):
            raise InvalidInputError(f"{where}: {field} must be a memory id")
    _instant(r, "t_valid_from", required=True)
    _instant(r, "t_valid_to")
    _instant(r, "erased_at")
    if r.get("tier", "L2") != "L2":
        raise InvalidInputError(f"{where}: tier must be L2")
    position = r.get("position")
    if position is not None and (isinstance(position, bool) or not isinstance(position, int) or position < 0
                                 or position > 2**31 - 1):
        raise InvalidInputError(f"{where}: position must be a small non-negative integer")
    try:
        if r.get("erased_at") is None:
            check_content(r.get("content"))
            check_source(r.get("source"))
            check_provenance(r.get("provenance"))
        elif r.get("content") not in (None, "") or r.get("source") is not None or r.get("provenance") not in (None, {}) \
                or r.get("key") is not None or r.get("position") is not None:
            raise InvalidInputError("an erased memory holds no content, source, place, provenance or key")
        if r.get("key") is not None:
            check_text(r["key"], "key", MAX_KEY_CHARS)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    return r


def _same(have: Any, given: Any) -> bool:
    if isinstance(have, datetime):
        return given is not None and have == datetime.fromisoformat(given)
    return have == given


def _entities(conn: sa.Connection, records: list[dict[str, Any]]) -> int:
    from ..limits import check_entity_names
    written = 0
    for r in records:
        name = r.get("name").strip() if isinstance(r.get("name"), str) else ""
        aliases = r.get("aliases") or []
        if not name or not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
            raise InvalidInputError(f"line {r['line']}: an entity needs a name, and its aliases are a list of names")
        check_entity_names(name, aliases)
        entity_id = conn.execute(sa.select(entities.c.id).where(
            entities.c.namespace == r["namespace"], sa.func.lower(entities.c.name) == name.lower())).scalar()
        if entity_id is None:
            entity_id = conn.execute(entities.insert().values(id=new_entity_id(), namespace=r["namespace"], name=name)
                                     .returning(entities.c.id)).scalar_one()
            written += 1
        for alias in aliases:
            conn.execute(pg_insert(entity_aliases).values(entity_id=entity_id, alias=alias).on_conflict_do_nothing())
    return written


def _concepts(conn: sa.Connection, embedder: Any, records: list[dict[str, Any]]) -> int:
    from ..cold import check_concept_path
    from .validate import check_content

    written = 0
    for r in records:
        path = check_concept_path(r.get("path"))
        try:
            check_content(r.get("content"))
        except InvalidInputError as exc:
            raise InvalidInputError(f"line {r['line']}: {exc}") from None
        have = conn.execute(sa.select(concepts.c.content).where(concepts.c.namespace == r["namespace"],
                                                                concepts.c.path == path)).scalar()
        if have == r.get("content"):
            continue
        if have is not None:
            raise ConflictError(f"line {r['line']}: concept {path} exists here and differs: nothing was imported")
        [vector] = embedder.embed([path + " " + str(r.get("content") or "")])  # as Writer.put_concept embeds
        conn.execute(concepts.insert().values(namespace=r["namespace"], path=path, content=str(r["content"]),
                                              embedding=vector))
        written += 1
    return written


def _policies(conn: sa.Connection, records: list[dict[str, Any]]) -> int:
    written = 0
    for r in records:
        policy = parse_policy(r.get("policy"), r["namespace"]).to_dict()
        have = conn.execute(sa.select(policies.c.policy).where(policies.c.namespace == r["namespace"])).scalar()
        if have == policy:
            continue
        if have is not None:
            raise ConflictError(f"line {r['line']}: {r['namespace']}'s policy differs here: nothing was imported")
        conn.execute(policies.insert().values(namespace=r["namespace"], policy=policy))
        written += 1
    return written


def _mentions(conn: sa.Connection, live: list[dict[str, Any]]) -> None:
    """Link the imported live memories to the entities of their lineage, as a write would."""
    from ..index import IndexReader, Scope

    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for r in live:
        by_namespace.setdefault(r["namespace"], []).append(r)
    for name, rows in by_namespace.items():
        known = IndexReader(conn).visible_entities(Scope(Namespace(name)))
        if known:
            record_mentions(conn, ((r["id"], entity_id) for r in rows for entity_id in mentioned_entities(r["content"],
                                                                                                          known)))
