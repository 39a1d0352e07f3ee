"""Versioned schema migrations, applied in order under an advisory lock.

The embedder's name and dimension are recorded at first migration: the vector columns are typed
with that dimension, and opening the store with another embedder is a clear error.
"""
from __future__ import annotations

import json
from typing import Callable, Iterator, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..errors import ConfigError
from ..types import Namespace
from .schema import NAMESPACE_INDEX_COMMENT, meta, metadata, namespace_index_names

MIGRATION_LOCK = 0x6A10_0001


VECTOR_INDEX = "memories_embedding_idx"


def create_vector_index(conn: Connection, maintenance_work_mem: str | None = None) -> None:
    """The HNSW index over memory vectors (cosine). A bulk restore may build it after the load."""
    if maintenance_work_mem:
        conn.exec_driver_sql(f"SET LOCAL maintenance_work_mem = '{maintenance_work_mem}'")
    conn.exec_driver_sql(f"CREATE INDEX {VECTOR_INDEX} ON memories USING hnsw (embedding vector_cosine_ops)")


def drop_vector_index(conn: Connection) -> None:
    conn.exec_driver_sql(f"DROP INDEX {VECTOR_INDEX}")


def valid_indexes(conn: Connection, names: Sequence[str]) -> set[str]:
    """Which of these indexes exist and are valid (namespace indexes are built in one transaction,
    so they are either whole or absent)."""
    found = conn.execute(sa.text("SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
                                 " WHERE c.relname = ANY(:names) AND i.indisvalid"), {"names": list(names)})
    return set(found.scalars())


def with_own_indexes(conn: Connection, namespaces: Sequence[str]) -> set[str]:
    """Those of ``namespaces`` whose own HNSW and GIN indexes both exist and are valid."""
    names = {ns: namespace_index_names(ns) for ns in namespaces}
    found = valid_indexes(conn, [name for pair in names.values() for name in pair])
    return {ns for ns, pair in names.items() if set(pair) <= found}


# from about this many live rows a namespace's own indexes pay for their build and upkeep
ADVISED_NAMESPACE_INDEX_ROWS = 50_000


def create_namespace_indexes(conn: Connection, namespace: Namespace) -> bool:
    """A namespace's own partial HNSW and GIN indexes over its live rows; False if they exist.

    In a million-row store a caller's lineage is a small slice of the shared indexes: the HNSW probe
    walks past everyone else's rows and the GIN probe decodes everyone's postings. Readers use these
    indexes for the namespaces that have them (docs/bench/latency.md). Built in the caller's
    transaction, so writes to memories wait for the build (seconds per 100k rows).
    """
    if with_own_indexes(conn, [namespace.path]):
        return False
    vec, tsv = namespace_index_names(namespace.path)
    # a validated namespace holds only letters, digits, '-', '_', '.' and '/': a safe literal
    live = f"namespace = '{namespace.path}' AND t_valid_to IS NULL AND erased_at IS NULL"
    conn.exec_driver_sql("SET LOCAL maintenance_work_mem = '1GB'")
    conn.exec_driver_sql(f"CREATE INDEX IF NOT EXISTS {vec} ON memories USING hnsw (embedding vector_cosine_ops)"
                         f" WHERE {live}")
    conn.exec_driver_sql(f"CREATE INDEX IF NOT EXISTS {tsv} ON memories USING gin (content_tsv) WHERE {live}")
    for name in (vec, tsv):
        conn.exec_driver_sql(f"COMMENT ON INDEX {name} IS '{NAMESPACE_INDEX_COMMENT}{namespace.path}'")
    return True


def drop_namespace_indexes(conn: Connection, namespace: Namespace) -> bool:
    """Drop a namespace's own indexes; False if it had none."""
    names = namespace_index_names(namespace.path)
    existed = valid_indexes(conn, names)
    for name in names:
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
    return bool(existed)


def namespace_indexes(conn: Connection) -> list[str]:
    """The namespaces that have their own indexes (read back from the index comments)."""
    rows = conn.exec_driver_sql(
        "SELECT obj_description(c.oid, 'pg_class') FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
        " WHERE starts_with(c.relname, 'memories_ns_vec_') AND i.indisvalid")
    return sorted(text.removeprefix(NAMESPACE_INDEX_COMMENT) for (text,) in rows
                  if text and text.startswith(NAMESPACE_INDEX_COMMENT))


# Lexeme -> sparse dimension: md5 (stable across PostgreSQL versions, unlike hashtext) folded into
# 2^29 dimensions (sparsevec allows 10^9); a collision merges two lexemes' counts in one row.
TERM_DIMS = 1 << 29
MAX_TERMS_PER_ROW = 16_000  # sparsevec's limit on non-zero elements
LEXICON_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION halomem_term_dim(lexeme text) RETURNS int
  IMMUTABLE STRICT PARALLEL SAFE LANGUAGE sql
  AS $$ SELECT ((('x' || substr(md5(lexeme), 1, 8))::bit(32)::int) & {TERM_DIMS - 1}) + 1 $$;
CREATE OR REPLACE FUNCTION halomem_term_counts(tsv tsvector) RETURNS sparsevec
  IMMUTABLE STRICT PARALLEL SAFE LANGUAGE sql SET search_path FROM CURRENT
  AS $$ SELECT ('{{' || coalesce(string_agg(dim || ':' || n, ',' ORDER BY dim), '') || '}}/{TERM_DIMS}')::sparsevec
        FROM (SELECT halomem_term_dim(lexeme) AS dim, sum(coalesce(array_length(positions, 1), 1)) AS n
              FROM unnest(tsv) GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT {MAX_TERMS_PER_ROW}) AS t $$;
CREATE OR REPLACE FUNCTION halomem_doc_length(tsv tsvector) RETURNS int
  IMMUTABLE STRICT PARALLEL SAFE LANGUAGE sql
  AS $$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::int FROM unnest(tsv) $$;
"""


def create_lexicon_functions(conn: Connection) -> None:
    """The SQL functions behind the generated BM25 columns (schema.memories.term_counts). The one
    that calls another and names sparsevec keeps the search path it was made under: pg_restore runs
    with an empty one, and a generated column computed then must still find them."""
    conn.exec_driver_sql(LEXICON_FUNCTIONS)


def _v15_restorable_functions(conn: Connection, dim: int) -> None:
    """The lexicon's functions as create_lexicon_functions makes them now: a pg_dump restores."""
    create_lexicon_functions(conn)


def _v1_initial(conn: Connection, dim: int) -> None:
    conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
    create_lexicon_functions(conn)  # the current schema's generated columns call them
    metadata.create_all(conn)
    for table in ("memories", "concepts"):
        conn.exec_driver_sql(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({dim})")
    for ddl in (
        "CREATE INDEX memories_namespace_idx ON memories (namespace)",
        "CREATE INDEX memories_live_ns_idx ON memories (namespace, t_valid_from DESC)"
        " WHERE t_valid_to IS NULL AND erased_at IS NULL",
        "CREATE INDEX memories_tsv_idx ON memories USING gin (content_tsv)",
        # at most one successor per row: a chain can never fork into two valid heads
        "CREATE UNIQUE INDEX memories_one_successor_idx ON memories (supersedes) WHERE supersedes IS NOT NULL",
        "CREATE INDEX concepts_tsv_idx ON concepts USING gin (content_tsv)",
        "CREATE UNIQUE INDEX entities_ns_name_idx ON entities (namespace, lower(name))",
        "CREATE INDEX entity_aliases_lower_idx ON entity_aliases (lower(alias))",
        "CREATE INDEX mentions_entity_idx ON mentions (entity_id)",
    ):
        conn.exec_driver_sql(ddl)
    create_vector_index(conn)


READER_ROLE = "halomem_reader"
# what drivers read, and halomem_meta: each search reads the store's embedder in its snapshot
READ_TABLES = ("memories", "concepts", "entities", "entity_aliases", "mentions", "lexicon", "lexicon_events",
               "passages", "halomem_meta")


def _v2_reader_role(conn: Connection, dim: int) -> None:
    """A login role with SELECT-only grants on what drivers read, where the server lets us make one
    (a superuser or CREATEROLE), or where a DBA made it (db.setup_sql).

    Driver-serving reads connect as this role, so even a driver that got hold of the connection
    cannot write, whatever it does to its transaction or session.
    """
    allowed = conn.exec_driver_sql(
        "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user").scalar()
    exists = conn.exec_driver_sql(f"SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}'").scalar()
    if allowed and not exists:
        conn.exec_driver_sql(f"CREATE ROLE {READER_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT")
    grant_reader(conn)


def grant_reader(conn: Connection) -> bool:
    """SELECT on exactly the tables drivers read, for the reader role if it exists (the tables'
    owner may grant it; so may the database's owner CONNECT and, on PostgreSQL 15+, USAGE on
    public). False when there is no such role."""
    if not conn.exec_driver_sql(f"SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}'").scalar():
        return False
    database = conn.exec_driver_sql("SELECT current_database()").scalar()
    conn.exec_driver_sql(f'GRANT CONNECT ON DATABASE "{database}" TO {READER_ROLE}')
    conn.exec_driver_sql(f"GRANT USAGE ON SCHEMA public TO {READER_ROLE}")
    tables = [t for t in READ_TABLES if conn.exec_driver_sql(f"SELECT to_regclass('{t}')").scalar()]
    if tables:
        conn.exec_driver_sql(f"GRANT SELECT ON {', '.join(tables)} TO {READER_ROLE}")
    return True


def _grant_reader(conn: Connection, table: str) -> None:
    """A table added after v2 becomes readable by the reader role, where there is one."""
    if conn.exec_driver_sql(f"SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}'").scalar():
        conn.exec_driver_sql(f"GRANT SELECT ON {table} TO {READER_ROLE}")


def _v3_principals(conn: Connection, dim: int) -> None:
    """Agent principals and the audit column naming who acted (halomem.auth)."""
    from .schema import principals

    principals.create(conn, checkfirst=True)
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS principals_namespace_idx ON principals (namespace)")
    conn.exec_driver_sql("ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS principal text")


def set_role_password(conn: Connection, role: str, password: str) -> bool:
    """Give an existing login role a password (derived by db.credentials: letters and digits only)."""
    if not password.isalnum() or not role.isidentifier():
        raise ValueError("role and password must be plain identifiers")
    if not conn.exec_driver_sql(f"SELECT 1 FROM pg_roles WHERE rolname = '{role}'").scalar():
        return False
    conn.exec_driver_sql(f"ALTER ROLE {role} PASSWORD '{password}'")
    return True


def _v4_ingest_keys(conn: Connection, dim: int) -> None:
    """Keyed ingest: a caller's stable id per memory, unique among a namespace's live rows."""
    conn.exec_driver_sql("ALTER TABLE memories ADD COLUMN IF NOT EXISTS key text")
    conn.exec_driver_sql("CREATE UNIQUE INDEX IF NOT EXISTS memories_live_key_idx ON memories (namespace, key)"
                         " WHERE key IS NOT NULL AND t_valid_to IS NULL AND erased_at IS NULL")


def _v5_lexicon(conn: Connection, dim: int) -> None:
    """BM25 with corpus statistics in the database: per-row term counts and lengths (generated
    columns) and the per-namespace lexicon, counted from the live rows already stored."""
    from .schema import lexicon

    create_lexicon_functions(conn)
    for column, function, kind in (("term_counts", "halomem_term_counts", "sparsevec"),
                                   ("doc_length", "halomem_doc_length", "int")):
        conn.exec_driver_sql(f"ALTER TABLE memories ADD COLUMN IF NOT EXISTS {column} {kind} GENERATED ALWAYS AS"
                             f" ({function}(to_tsvector('english', content))) STORED")
    conn.exec_driver_sql("ALTER TABLE memories ALTER COLUMN term_counts SET STORAGE MAIN")  # kept in the row
    if sa.inspect(conn).has_table("lexicon"):
        return  # a fresh store: v1 made it, empty, with everything else
    lexicon.create(conn)
    _grant_reader(conn, "lexicon")
    conn.exec_driver_sql(
        "INSERT INTO lexicon (namespace, lexeme, docs, tokens)"
        " SELECT namespace, lexeme, count(*), sum(coalesce(array_length(positions, 1), 1))"
        " FROM memories, unnest(content_tsv) WHERE t_valid_to IS NULL AND erased_at IS NULL GROUP BY 1, 2"
        " UNION ALL SELECT namespace, '', count(*), sum(doc_length)"
        " FROM memories WHERE t_valid_to IS NULL AND erased_at IS NULL GROUP BY 1")


def _v6_source_positions(conn: Connection, dim: int) -> None:
    """Each memory's place among its source's memories (write.places). Rows stored before have no
    known order (one transaction stamps a batch with one time, and ids are random): they stay NULL."""
    conn.exec_driver_sql("ALTER TABLE memories ADD COLUMN IF NOT EXISTS position integer")
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS memories_source_position_idx ON memories"
                         " (namespace, source, position) WHERE source IS NOT NULL")


def _v7_token_lineage(conn: Connection, dim: int) -> None:
    """Which token minted which (auth.store): revocation follows the lineage down."""
    conn.exec_driver_sql("ALTER TABLE principals ADD COLUMN IF NOT EXISTS created_by text")
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS principals_created_by_idx ON principals (created_by)"
                         " WHERE created_by IS NOT NULL")


PASSAGE_INDEX = "passages_embedding_idx"


def _v8_passages(conn: Connection, dim: int) -> None:
    """Passage vectors for long memories (embed.passages), with their own HNSW index."""
    from .schema import passages

    passages.create(conn, checkfirst=True)  # a fresh store: v1 made it, untyped, with everything else
    conn.exec_driver_sql(f"ALTER TABLE passages ALTER COLUMN embedding TYPE vector({dim})")
    conn.exec_driver_sql(f"CREATE INDEX IF NOT EXISTS {PASSAGE_INDEX} ON passages USING hnsw (embedding vector_cosine_ops)")
    grant_reader(conn)  # passages, and halomem_meta (searches read the store's embedder)


def _v9_search_seen(conn: Connection, dim: int) -> None:
    """What each search returned and its query text (audit.seen): who-saw, replay, feedback."""
    from .schema import search_queries, search_seen

    search_seen.create(conn, checkfirst=True)
    search_queries.create(conn, checkfirst=True)
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS search_seen_memory_idx ON search_seen (memory_id)")
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS search_queries_at_idx ON search_queries (at)")


def _v10_feedback(conn: Connection, dim: int) -> None:
    """Feedback on returned refs (halomem.feedback)."""
    from .schema import feedback

    feedback.create(conn, checkfirst=True)
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS feedback_seq_idx ON feedback (seq)")
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS feedback_memory_idx ON feedback (memory_id)")


def _v11_history_indexes(conn: Connection, dim: int) -> None:
    """What an as-of read walked: every row of a namespace newest first (replacing the plain
    namespace index, which it covers), and the rows closed by a supersession, by when (the second
    served the statistics of v11 alone: v12 drops it)."""
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS memories_ns_from_idx ON memories (namespace, t_valid_from DESC)")
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS memories_ns_closed_idx ON memories (namespace, t_valid_to)"
                         " WHERE t_valid_to IS NOT NULL AND erased_at IS NULL")
    conn.exec_driver_sql("DROP INDEX IF EXISTS memories_namespace_idx")


LEXICON_EVENTS_FROM_HISTORY = """
INSERT INTO lexicon_events (namespace, lexeme, at, docs, tokens)
SELECT namespace, lexeme, at, sum(sign), sum(sign * n) FROM (
    SELECT m.namespace, u.lexeme, e.at, e.sign, coalesce(array_length(u.positions, 1), 1) AS n
    FROM memories m CROSS JOIN LATERAL (VALUES (m.t_valid_from, 1), (m.t_valid_to, -1)) AS e(at, sign),
         unnest(m.content_tsv) AS u
    WHERE m.erased_at IS NULL AND e.at IS NOT NULL
    UNION ALL
    SELECT m.namespace, '', e.at, e.sign, m.doc_length
    FROM memories m CROSS JOIN LATERAL (VALUES (m.t_valid_from, 1), (m.t_valid_to, -1)) AS e(at, sign)
    WHERE m.erased_at IS NULL AND e.at IS NOT NULL
) AS events
GROUP BY namespace, lexeme, at HAVING sum(sign) <> 0 OR sum(sign * n) <> 0
"""


def _v12_lexicon_events(conn: Connection, dim: int) -> None:
    """The lexicon's history (schema.lexicon_events), made from the rows' validity times, so an
    as-of read's statistics are today's minus the events since (index.lexical)."""
    from .schema import lexicon_events

    if not sa.inspect(conn).has_table("lexicon_events"):
        lexicon_events.create(conn)
        conn.exec_driver_sql(LEXICON_EVENTS_FROM_HISTORY)
    _grant_reader(conn, "lexicon_events")
    conn.exec_driver_sql("DROP INDEX IF EXISTS memories_ns_closed_idx")


def _batches(conn: Connection, select: str, start: object, column: str) -> Iterator[list[sa.Row]]:
    """The rows of a backfill's ``select`` (ordered by ``column``, ``:after`` its cursor), a batch at a
    time, so a large store is migrated without holding all of it in memory."""
    after = start
    while True:
        rows = conn.execute(sa.text(select), {"after": after}).all()
        if not rows:
            return
        yield rows
        after = getattr(rows[-1], column)


def _v13_audit_records(conn: Connection, dim: int) -> None:
    """Audit rows as typed records (audit.log): ``fields`` as data, hashed canonically. Rows written
    before keep their text and the hash over it (``row_format`` 1); their fields are read from the
    text once, here (audit.legacy), so reports, replay and who-saw read every row as data."""
    from ..records import clean
    from . import legacy_audit

    conn.exec_driver_sql("ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS fields jsonb NOT NULL DEFAULT '{}'::jsonb")
    conn.exec_driver_sql("ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS row_format smallint NOT NULL DEFAULT 1")
    conn.exec_driver_sql("ALTER TABLE audit_log ALTER COLUMN row_format SET DEFAULT 2")
    conn.exec_driver_sql("ALTER TABLE audit_log ALTER COLUMN detail DROP NOT NULL")
    for rows in _batches(conn, "SELECT seq, action, detail FROM audit_log WHERE row_format = 1 AND seq > :after"
                         " ORDER BY seq LIMIT 5000", 0, "seq"):
        conn.execute(sa.text("UPDATE audit_log AS a SET fields = CAST(v.fields AS jsonb) FROM"
                             " unnest(CAST(:seqs AS bigint[]), CAST(:fields AS text[])) AS v(seq, fields)"
                             " WHERE a.seq = v.seq"),
                     {"seqs": [r.seq for r in rows],
                      "fields": [json.dumps(clean(legacy_audit.parse(r.action, r.detail or ""))) for r in rows]})


def _v14_content_keys(conn: Connection, dim: int) -> None:
    """Consolidation (write.consolidate): each live row's normalised-text digest, and the index that
    finds the live row of a namespace holding a text."""
    from ..texts import content_key

    conn.exec_driver_sql("ALTER TABLE memories ADD COLUMN IF NOT EXISTS content_key text")
    for rows in _batches(conn, "SELECT id, content FROM memories WHERE content_key IS NULL AND erased_at IS NULL"
                         " AND id > :after ORDER BY id LIMIT 5000", "", "id"):
        conn.execute(sa.text("UPDATE memories AS m SET content_key = v.k FROM unnest(CAST(:ids AS text[]),"
                             " CAST(:keys AS text[])) AS v(id, k) WHERE m.id = v.id"),
                     {"ids": [r.id for r in rows], "keys": [content_key(r.content) for r in rows]})
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS memories_live_content_idx ON memories (namespace, content_key)"
                         " WHERE t_valid_to IS NULL AND erased_at IS NULL")


def _v16_model_calls(conn: Connection, dim: int) -> None:
    """Formation's audit rows read by namespace and time: a namespace's tokens today (its budget),
    usage per day, and which sessions' extraction failed (formation, audit.usage)."""
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS audit_formation_idx ON audit_log (actor_ns, at)"
                         " WHERE action IN ('model', 'extract')")


MIGRATIONS: list[tuple[int, str, Callable[[Connection, int], None]]] = [
    (1, "initial schema", _v1_initial),
    (2, "select-only reader role", _v2_reader_role),
    (3, "agent principals", _v3_principals),
    (4, "ingest keys", _v4_ingest_keys),
    (5, "lexical statistics", _v5_lexicon),
    (6, "source positions", _v6_source_positions),
    (7, "token lineage", _v7_token_lineage),
    (8, "passage vectors", _v8_passages),
    (9, "what searches returned", _v9_search_seen),
    (10, "feedback on returned refs", _v10_feedback),
    (11, "history indexes", _v11_history_indexes),
    (12, "the lexicon's history", _v12_lexicon_events),
    (13, "audit rows as typed records", _v13_audit_records),
    (14, "content keys for consolidation", _v14_content_keys),
    (15, "functions a dump restores", _v15_restorable_functions),
    (16, "formation's audit rows by namespace", _v16_model_calls),
]
LATEST = MIGRATIONS[-1][0]


def _read_meta(conn: Connection) -> dict[str, str]:
    exists = conn.exec_driver_sql("SELECT to_regclass('halomem_meta') IS NOT NULL").scalar()
    if not exists:
        return {}
    return {k: v for k, v in conn.execute(sa.select(meta.c.key, meta.c.value))}


def _write_meta(conn: Connection, key: str, value: str) -> None:
    from sqlalchemy.dialects.postgresql import insert

    stmt = insert(meta).values(key=key, value=value)
    conn.execute(stmt.on_conflict_do_update(index_elements=[meta.c.key], set_={"value": value}))


def migrate(engine: sa.Engine, embedder_name: str, dim: int) -> int:
    """Bring the schema to LATEST; returns the version found before migrating.

    An up-to-date schema is only read (no lock, no write): every CLI call boots a kernel."""
    with engine.connect() as conn:
        found = _read_meta(conn)
    if found.get("schema_version") == str(LATEST):
        check_embedder(found, embedder_name, dim)
        return LATEST
    with engine.begin() as conn:
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
        found = _read_meta(conn)
        version = int(found.get("schema_version", "0"))
        if version > LATEST:
            raise ConfigError(f"database schema v{version} is newer than this halomem (v{LATEST}): upgrade halomem")
        if version:
            check_embedder(found, embedder_name, dim)
        for number, _title, apply in MIGRATIONS:
            if number > version:
                apply(conn, dim)
        if version == 0:
            _write_meta(conn, "embedder", embedder_name)
            _write_meta(conn, "embedding_dim", str(dim))
        _write_meta(conn, "schema_version", str(LATEST))
    return version


def stored_embedder(engine: sa.Engine) -> str | None:
    """The embedder a store's vectors were made by (its registry spec), or None for a new store."""
    with engine.connect() as conn:
        return _read_meta(conn).get("embedder")


def check_embedder(found: dict[str, str], embedder_name: str, dim: int) -> None:
    stored = (found.get("embedder"), found.get("embedding_dim"))
    if stored != (embedder_name, str(dim)):
        raise ConfigError(
            f"stored vectors were made by embedder {stored[0]}/{stored[1]}-d but the active embedder is "
            f"{embedder_name}/{dim}-d: unset HALOMEM_EMBEDDER (or set it to {stored[0]}), or change the "
            f"store's embedder with `halomem reembed --embedder {embedder_name}` (vectors are never mixed)"
        )
