"""Tables as SQLAlchemy Core objects. DDL lives in migrations; queries use these objects."""
from __future__ import annotations

import hashlib

import sqlalchemy as sa
from pgvector.sqlalchemy import SPARSEVEC, Vector
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR

metadata = sa.MetaData()

TEXT_SEARCH_CONFIG = "english"

meta = sa.Table(
    "halomem_meta", metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

memories = sa.Table(
    "memories", metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("embedding", Vector(), nullable=True),
    sa.Column("source", sa.Text, nullable=True),
    sa.Column("tier", sa.Text, nullable=False, server_default="L2"),
    sa.Column("t_valid_from", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Column("t_valid_to", sa.DateTime(timezone=True), nullable=True),
    sa.Column("supersedes", sa.Text, nullable=True),
    sa.Column("superseded_by", sa.Text, nullable=True),
    sa.Column("provenance", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("content_tsv", TSVECTOR,
              sa.Computed(f"to_tsvector('{TEXT_SEARCH_CONFIG}', content)", persisted=True)),
    sa.Column("key", sa.Text, nullable=True),  # an ingest key: unique among a namespace's live rows
    # a digest of the normalised text (write.consolidate.content_key): the same text twice is one memory
    sa.Column("content_key", sa.Text, nullable=True),
    # the row's place among its source's memories in its namespace (halomem.write.places), or NULL
    sa.Column("position", sa.Integer, nullable=True),
    # BM25's per-row inputs, prepared once at write time (halomem.index.lexical): each lexeme's count
    # as a sparse vector (dimension: halomem_term_dim, db.migrations) and the row's length in lexemes
    sa.Column("term_counts", SPARSEVEC,
              sa.Computed(f"halomem_term_counts(to_tsvector('{TEXT_SEARCH_CONFIG}', content))", persisted=True)),
    sa.Column("doc_length", sa.Integer,
              sa.Computed(f"halomem_doc_length(to_tsvector('{TEXT_SEARCH_CONFIG}', content))", persisted=True)),
)

# Corpus statistics of live rows per namespace, kept by the write path in the writing transaction
# (halomem.write.lexicon): for each lexeme, the rows holding it (docs) and its total count (tokens);
# the row with lexeme '' holds the namespace's row count and total length. A caller's statistics
# are the sums over its lineage, so they count exactly the rows it may read.
lexicon = sa.Table(
    "lexicon", metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("lexeme", sa.Text, primary_key=True),
    sa.Column("docs", sa.BigInteger, nullable=False),
    sa.Column("tokens", sa.BigInteger, nullable=False),
)

# The lexicon's history (halomem.write.lexicon, in the same transactions): each row is the net
# change a write made to (namespace, lexeme)'s docs and tokens at the instant it made it -- rows born
# count +1 at their t_valid_from, rows closed -1 at their t_valid_to (one transaction, one instant).
# Today's lexicon is the sum of every event; an instant's is today's minus the events after it
# (index.lexical), so an as-of read's statistics cost what changed since, summed per write, not per
# row. An erasure takes the row out of every instant: its events are undone, and an event left at
# zero is deleted, so the erased words leave this table too.
lexicon_events = sa.Table(
    "lexicon_events", metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("lexeme", sa.Text, primary_key=True),
    sa.Column("at", sa.DateTime(timezone=True), primary_key=True),
    sa.Column("docs", sa.BigInteger, nullable=False),
    sa.Column("tokens", sa.BigInteger, nullable=False),
)

# Passage vectors of memories longer than their embedder's window (embed.passages): the vector lane
# scores a memory by its best passage. They go with their memory: erase deletes them, purge cascades.
passages = sa.Table(
    "passages", metadata,
    sa.Column("memory_id", sa.Text, sa.ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("ordinal", sa.Integer, primary_key=True),
    sa.Column("embedding", Vector(), nullable=False),
)

concepts = sa.Table(
    "concepts", metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("path", sa.Text, primary_key=True),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("embedding", Vector(), nullable=True),
    sa.Column("materialized_id", sa.Text, nullable=True),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Column("content_tsv", TSVECTOR,
              sa.Computed(f"to_tsvector('{TEXT_SEARCH_CONFIG}', path || ' ' || content)", persisted=True)),
)

entities = sa.Table(
    "entities", metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
)

entity_aliases = sa.Table(
    "entity_aliases", metadata,
    sa.Column("entity_id", sa.BigInteger, sa.ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("alias", sa.Text, primary_key=True),
)

mentions = sa.Table(
    "mentions", metadata,
    sa.Column("memory_id", sa.Text, sa.ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("entity_id", sa.BigInteger, sa.ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True),
)

audit_log = sa.Table(
    "audit_log", metadata,
    sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("actor_ns", sa.Text, nullable=False),
    sa.Column("action", sa.Text, nullable=False),
    # the row's record as data (audit.log): what happened and its fields, hashed canonically
    sa.Column("fields", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("request_id", sa.Text, nullable=False),
    sa.Column("prev_hash", sa.Text, nullable=False),
    sa.Column("hash", sa.Text, nullable=False),
    sa.Column("principal", sa.Text, nullable=True),  # the token's principal; None: the local operator
    # 2: the hash covers ``fields``; 1: a row written before v13, whose hash covers its free-text
    # ``detail`` (kept for it alone; its fields were read from the text once, by the migration)
    sa.Column("row_format", sa.SmallInteger, nullable=False, server_default="2"),
    sa.Column("detail", sa.Text, nullable=True),
)

# Agent principals (halomem.auth). Only a hash of each token's secret is kept; the reader role
# that serves drivers has no grant on this table.
principals = sa.Table(
    "principals", metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("scopes", sa.Text, nullable=False),  # comma-separated subset of read,write,admin
    sa.Column("secret_hash", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    # the principal whose token minted this one (None: the local operator); revoking a token revokes
    # everything it minted, down the lineage
    sa.Column("created_by", sa.Text, nullable=True),
)

policies = sa.Table(
    "policies", metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("policy", JSONB, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
)

# What each search returned (halomem.audit.seen), one row per returned ref, beside its audit row:
# derived from the chain row's refs (which the hash covers), indexed for `audit who-saw`. No content.
search_seen = sa.Table(
    "search_seen", metadata,
    sa.Column("seq", sa.BigInteger, sa.ForeignKey("audit_log.seq", ondelete="CASCADE"), primary_key=True),
    sa.Column("rank", sa.Integer, primary_key=True),
    sa.Column("tier", sa.Text, nullable=False),
    sa.Column("ref", sa.Text, nullable=False),  # a memory id (L2) or a concept path (L3)
    sa.Column("memory_id", sa.Text, nullable=True),  # the memory (L2), or the concept's materialized copy
    sa.Column("score", sa.Float, nullable=False),
)

# Search query texts: user data, so outside the hash chain (its row holds a salted digest) and
# erasable: retention prunes them, and erasing a memory forgets the queries that were returned it.
search_queries = sa.Table(
    "search_queries", metadata,
    sa.Column("seq", sa.BigInteger, sa.ForeignKey("audit_log.seq", ondelete="CASCADE"), primary_key=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("salt", sa.Text, nullable=False),
    sa.Column("query", sa.Text, nullable=False),
)

# Feedback on a ref a search returned (halomem.feedback): the verdict is judged data, kept for
# reports; the note is user data, cleared when the memory is erased.
feedback = sa.Table(
    "feedback", metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("seq", sa.BigInteger, sa.ForeignKey("audit_log.seq", ondelete="CASCADE"), nullable=False),
    sa.Column("ref", sa.Text, nullable=False),
    sa.Column("memory_id", sa.Text, nullable=True),
    sa.Column("namespace", sa.Text, nullable=False),  # the search's (caller) namespace
    sa.Column("principal", sa.Text, nullable=True),  # who gave it; None: the local operator
    sa.Column("verdict", sa.Text, nullable=False),
    sa.Column("note", sa.Text, nullable=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
)


# The tables that can hold personal text (a memory's words, a query, a note, a name), in one list:
# erase clears a memory's traces in them (write.writer.Writer.erase: its row, passages, mentions,
# lexicon counts and history, the queries that found it, the notes on it), purge rewrites every one
# of them so no old row version survives in their files, and the erasure test greps their files.
PERSONAL_TEXT_TABLES = ("memories", "passages", "mentions", "lexicon", "lexicon_events", "concepts", "entities",
                        "entity_aliases", "search_queries", "feedback")
# every other table, and why it holds none (a test holds each table of the schema to one list)
NO_PERSONAL_TEXT = {"halomem_meta": "settings", "policies": "driver names and splits",
                    "principals": "token ids, names an operator chose and hashes of secrets",
                    "audit_log": "ids, counts, kinds and the reasons operators typed: never memory text",
                    "search_seen": "refs and scores of what searches returned"}

NAMESPACE_INDEX_COMMENT = "halomem namespace index: "


def namespace_index_names(namespace: str) -> tuple[str, str]:
    """(HNSW, GIN) names of one namespace's own partial indexes (built by db.migrations)."""
    digest = hashlib.sha1(namespace.encode("utf-8")).hexdigest()[:16]
    return f"memories_ns_vec_{digest}", f"memories_ns_tsv_{digest}"
