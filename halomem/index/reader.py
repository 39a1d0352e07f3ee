"""Read queries over memories, concepts and the entity graph, always through acl.visible()."""
from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection

from ..db.schema import TEXT_SEARCH_CONFIG, concepts, entities, entity_aliases, memories, mentions, meta, passages
from ..embed.tokenize import terms, word_boundary_pattern
from ..types import Candidate, CorpusStats, Entity, EntityFact, ScoredRef, VectorHit, estimate_tokens
from . import lexical
from .acl import Scope, in_subtree, visible
from .catalog import NamespaceIndexCatalog
from ..results import MemoryRow


def concept_ref(namespace: str, path: str) -> str:
    """An L3 ref names one concept: the same path may exist in a namespace and in its ancestors."""
    return f"{namespace}:{path}"

MAX_QUERY_TERMS = 64
CONCEPT_MIN_COSINE = 0.35  # without a shared lexeme, a concept must at least be this close in meaning
MAX_FACTS_PER_HOP = 200
HNSW_EF_SEARCH_MIN, HNSW_EF_SEARCH_MAX = 40, 1000  # pgvector's default and its upper bound
# how every reader walks the HNSW graph: keep scanning until k rows pass the ACL filter (pgvector
# >= 0.8), with a candidate list as long as the LIMIT (pgvector's advice); set per transaction
_HNSW_SETTINGS = ("SELECT set_config('hnsw.iterative_scan', 'strict_order', true),"
                  " set_config('hnsw.ef_search', '{ef}', true)")
_ROW_COLUMNS = [memories.c[name] for name in MemoryRow.__dataclass_fields__]


def _query_vector() -> sa.ColumnElement[Any]:
    """The query's embedding in a statement: a text parameter the server casts (IndexReader.
    _vector_values makes its text once per search, not once per statement)."""
    return sa.cast(sa.bindparam("embedding", type_=sa.Text), Vector())


def query_terms(text: str) -> list[str]:
    """Distinct query terms, letters and digits only (so no tsquery syntax can get through)."""
    return list(dict.fromkeys(terms(text)))[:MAX_QUERY_TERMS]


def _tsquery(words: list[str], operator: str) -> sa.ColumnElement[Any]:
    return sa.func.to_tsquery(sa.literal_column(f"'{TEXT_SEARCH_CONFIG}'"), f" {operator} ".join(words))


def or_tsquery(text: str) -> sa.ColumnElement[Any] | None:
    """A tsquery matching any query term."""
    words = query_terms(text)
    return _tsquery(words, "|") if words else None


# An exact scan of a group reads its rows and sorts them; a filtered HNSW walk visits about
# ef_search x (rows in the index / rows of the group) rows, computing distances to each one's
# neighbours. Measured on 50k long documents (a 9k-row lineage of a 50k-row shared index, k = 200):
# exact 17 ms p50 and every true neighbour, HNSW 27 ms p50 and 79% of them (it visited 1,126 rows,
# the estimate says 1,111). Walking a row cost about as much as reading 12 rows exactly; 10 leans
# toward the index.
EXACT_SCAN_ROWS_PER_WALKED_ROW = 10


def scan_exactly(group_rows: int, index_rows: int, ef_search: int) -> bool:
    """Whether reading a group's rows costs less than walking the HNSW index it would be found in."""
    if group_rows <= 0:
        return True
    walked = ef_search * max(index_rows, group_rows) / group_rows
    return group_rows <= EXACT_SCAN_ROWS_PER_WALKED_ROW * walked


@functools.lru_cache(maxsize=512)
def _nearest_statement(scope: Scope, groups: tuple[tuple[str, ...], ...], exact: tuple[bool, ...],
                       k: int) -> sa.Select[Any]:
    """vector_search's statement for one caller, index grouping, scan choice and k, the embedding a
    parameter (built once: building SQLAlchemy expressions per probe cost a measurable share of a
    plan())."""
    query = _query_vector()
    walked = memories.c.embedding.cosine_distance(query)
    # the same function as the <=> operator, but not an index operator: PostgreSQL reads the group's
    # rows and sorts them rather than walking the HNSW graph
    scanned = sa.func.cosine_distance(memories.c.embedding, query, type_=sa.Float)
    # one probe per index group: a namespace with its own HNSW index is walked alone
    probes = [sa.select(*lexical.CANDIDATE_COLUMNS, distance.label("d"))
              .where(visible(memories, scope, within=group), memories.c.embedding.is_not(None))
              .order_by(distance, memories.c.id).limit(k)
              for group, distance in ((g, scanned if e else walked) for g, e in zip(groups, exact))]
    if len(probes) == 1:
        return probes[0]
    nearest = sa.union_all(*probes).subquery("nearest")
    return sa.select(nearest).order_by(nearest.c.d, nearest.c.id).limit(k)


# passages read per hit wanted: a long memory's neighbouring windows crowd the nearest passages
PASSAGES_PER_HIT = 4


@functools.lru_cache(maxsize=512)
def _passage_statement(scope: Scope, exact: bool, k: int) -> sa.Select[Any]:
    """The memories whose best passage is nearest (embed.passages), with that passage's distance:
    the same visibility predicate as every memory read, through the passage's memory."""
    query = _query_vector()
    distance = (sa.func.cosine_distance(passages.c.embedding, query, type_=sa.Float) if exact
                else passages.c.embedding.cosine_distance(query))
    nearest = (sa.select(passages.c.memory_id, distance.label("d"))
               .select_from(passages.join(memories, memories.c.id == passages.c.memory_id))
               .where(visible(memories, scope)).order_by(distance).limit(k * PASSAGES_PER_HIT).subquery("p"))
    best = (sa.select(nearest.c.memory_id, sa.func.min(nearest.c.d).label("d"))
            .group_by(nearest.c.memory_id).subquery("best"))
    return (sa.select(*lexical.CANDIDATE_COLUMNS, best.c.d)
            .select_from(memories.join(best, best.c.memory_id == memories.c.id))
            .where(visible(memories, scope)).order_by(best.c.d, memories.c.id).limit(k))


@functools.lru_cache(maxsize=512)
def _vector_lane_statement(scope: Scope, groups: tuple[tuple[str, ...], ...], exact: tuple[bool, ...],
                           k: int) -> sa.CompoundSelect:
    """The nearest memories by their own vectors and by their best passages', in one statement."""
    own = _nearest_statement(scope, groups, exact, k).subquery("own")
    passage = _passage_statement(scope, all(exact), k).subquery("passage")
    return sa.union_all(sa.select(own), sa.select(passage))


@functools.lru_cache(maxsize=512)
def _fetch_statement(scope: Scope, live: bool) -> sa.Select[Any]:
    """fetch's statement for one caller (built once, as _nearest_statement), the ids an array."""
    return sa.select(*_ROW_COLUMNS).where(visible(memories, scope, live=live),
                                          memories.c.id == sa.func.any(sa.bindparam("ids", type_=ARRAY(sa.Text))))


@functools.lru_cache(maxsize=512)
def _features_statement(scope: Scope) -> sa.Select[Any]:
    """relevance_features' statement for one caller (built once, as _nearest_statement): each
    listed visible memory's cosine with the query (its own vector's and its best passage's) and the
    weighted share of the query's lexemes its text holds, the lexemes and weights as arrays."""
    query = _query_vector()
    best_passage = (sa.select(sa.func.max(1.0 - passages.c.embedding.cosine_distance(query)))
                    .where(passages.c.memory_id == memories.c.id).scalar_subquery())
    return sa.select(memories.c.id, (1.0 - memories.c.embedding.cosine_distance(query)).label("own"),
                     best_passage.label("passage"), lexical.held_share(memories.c.content_tsv).label("share")).where(
        visible(memories, scope), memories.c.id == sa.func.any(sa.bindparam("ids", type_=ARRAY(sa.Text))))


@functools.lru_cache(maxsize=512)
def _concept_features_statement(scope: Scope) -> sa.Select[Any]:
    """relevance_features' statement for the listed visible concepts (built once, as the memories')."""
    pairs = sa.func.unnest(sa.bindparam("namespaces", type_=ARRAY(sa.Text)),
                           sa.bindparam("paths", type_=ARRAY(sa.Text))).table_valued("namespace", "path") \
        .render_derived(name="wanted")
    listed = sa.select(pairs.c.namespace, pairs.c.path)
    return sa.select(concepts.c.namespace, concepts.c.path,
                     (1.0 - concepts.c.embedding.cosine_distance(_query_vector())).label("cos"),
                     lexical.held_share(concepts.c.content_tsv).label("share")).where(
        visible(concepts, scope), sa.tuple_(concepts.c.namespace, concepts.c.path).in_(listed))


@functools.lru_cache(maxsize=512)
def _any_concept_statement(scope: Scope) -> sa.Select[Any]:
    """Whether ``scope`` sees any concept (built once per caller, as _nearest_statement)."""
    return sa.select(sa.exists().select_from(concepts).where(visible(concepts, scope)))


class IndexReader:
    """Read methods bound to one connection (a READ ONLY transaction when serving a driver)."""

    def __init__(self, conn: Connection, catalog: NamespaceIndexCatalog | None = None,
                 ef_search: int | None = None) -> None:
        """``catalog``: shared knowledge of namespace indexes (a private one checks once per
        reader); ``ef_search``: what this transaction already set (MemoryIndex.reader sets it)."""
        self.conn = conn
        self._catalog = catalog or NamespaceIndexCatalog(ttl=float("inf"))
        self._ef_search = ef_search
        self._statistics: dict = {}  # lexical.statistics' answers in this reader's snapshot
        self._vectors: dict[tuple[float, ...], str] = {}  # a search's embedding as statement text

    def _index_groups(self, scope: Scope) -> tuple[tuple[str, ...], ...]:
        """The caller's lineage split the way the indexes are: a group for each namespace with its
        own partial indexes (db.migrations.create_namespace_indexes), one for the rest."""
        lineage = scope.namespace.lineage()
        has_own = self._catalog.own_indexes(self.conn, lineage)
        own = tuple((ns,) for ns in lineage if has_own[ns])
        rest = tuple(ns for ns in lineage if not has_own[ns])
        return own + ((rest,) if rest else ())

    def _exact_groups(self, scope: Scope, groups: tuple[tuple[str, ...], ...], ef_search: int) -> tuple[bool, ...]:
        """For each index group, whether to scan it exactly (scan_exactly) rather than walk HNSW: a
        namespace with its own index walks that index, the rest walk the shared one (which holds
        every namespace's rows)."""
        rows, everyone = self._catalog.live_rows(self.conn)
        has_own = self._catalog.own_indexes(self.conn, scope.namespace.lineage())
        out = []
        for group in groups:
            group_rows = sum(rows.get(ns, 0) for ns in group)
            own_index = len(group) == 1 and has_own[group[0]]
            out.append(scan_exactly(group_rows, group_rows if own_index else everyone, ef_search))
        return tuple(out)

    def _vector_values(self, embedding: Sequence[float]) -> dict[str, str]:
        """The ``embedding`` parameter of _query_vector, its text made once per reader."""
        key = tuple(embedding)
        if key not in self._vectors:
            self._vectors[key] = "[" + ",".join(str(float(x)) for x in key) + "]"
        return {"embedding": self._vectors[key]}

    def store_embedder(self) -> str | None:
        """The embedder the store's vectors are made by (halomem_meta), in this transaction's snapshot."""
        return self.conn.execute(sa.select(meta.c.value).where(meta.c.key == "embedder")).scalar()

    # --- L2 memories -------------------------------------------------------------------------
    def candidates(self, scope: Scope, limit: int) -> list[Candidate]:
        stmt = (sa.select(*lexical.CANDIDATE_COLUMNS).where(visible(memories, scope))
                .order_by(memories.c.t_valid_from.desc(), memories.c.id).limit(max(0, limit)))
        return [Candidate(r.id, r.content, r.source, position=r.position) for r in self.conn.execute(stmt)]

    def lexical_candidates(self, scope: Scope, query: str, limit: int) -> list[Candidate]:
        """Best BM25 first over what ``scope`` may read, scored in the database (index.lexical)."""
        words = query_terms(query)
        if not words or limit <= 0:
            return []
        return lexical.ranked(self.conn, scope, self._index_groups(scope), " ".join(words), limit, self._statistics)

    def corpus_stats(self, scope: Scope, words: Sequence[str]) -> CorpusStats:
        return lexical.corpus_stats(self.conn, scope, words, self._statistics)

    def lexical_probe(self, scope: Scope, query: str, limit: int) -> list[str]:
        """The raw GIN probe: ids of rows matching any query term, unranked (the benchmarks' floor)."""
        any_term = or_tsquery(query)
        if any_term is None or limit <= 0:
            return []
        stmt = (sa.select(memories.c.id)
                .where(visible(memories, scope), memories.c.content_tsv.op("@@")(any_term)).limit(limit))
        return list(self.conn.execute(stmt).scalars())

    def vector_search(self, scope: Scope, embedding: Sequence[float], k: int) -> list[VectorHit]:
        if k <= 0:
            return []
        # for a 200-row lane the default ef_search of 40 made the scan resume again and again,
        # slower (22 vs 8 ms p50 on 20k long documents) and further from the exact neighbours
        # (recall 0.81 vs 0.92)
        ef_search = min(max(int(k), HNSW_EF_SEARCH_MIN), HNSW_EF_SEARCH_MAX)
        groups = self._index_groups(scope)
        exact = self._exact_groups(scope, groups, ef_search)
        if ef_search != self._ef_search and not all(exact):
            self.conn.exec_driver_sql(_HNSW_SETTINGS.format(ef=ef_search))
            self._ef_search = ef_search
        vector = self._vector_values(embedding)
        best: dict[str, VectorHit] = {}  # a memory scores by its own vector or its best passage's
        for r in self.conn.execute(_vector_lane_statement(scope, groups, exact, int(k)), vector).all():
            hit = VectorHit(r.id, r.content, 1.0 - float(r.d), r.source, r.position)
            if r.id not in best or hit.score > best[r.id].score:
                best[r.id] = hit
        return sorted(best.values(), key=lambda h: (-h.score, h.ref))[:k]

    def fetch(self, scope: Scope, ids: Sequence[str], *, live: bool = True) -> dict[str, MemoryRow]:
        if not ids:
            return {}
        rows = self.conn.execute(_fetch_statement(scope, live), {"ids": list(ids)}).all()
        return {r.id: MemoryRow(**r._mapping) for r in rows}

    def recent(self, scope: Scope, limit: int, before: tuple[Any, str] | None = None,
               keys: Sequence[str] | None = None, within: str | None = None) -> list[MemoryRow]:
        """Visible live rows, newest first (validity start, then id, both descending); ``before``:
        the (t_valid_from, id) of the last row of the previous page; ``keys``: only keyed memories
        with these keys; ``within``: only one namespace of the lineage."""
        stmt = sa.select(*_ROW_COLUMNS).where(visible(memories, scope, within=within))
        if keys is not None:
            stmt = stmt.where(memories.c.key.in_(list(keys)))
        if before is not None:
            stmt = stmt.where(sa.tuple_(memories.c.t_valid_from, memories.c.id) < sa.tuple_(*before))
        stmt = stmt.order_by(memories.c.t_valid_from.desc(), memories.c.id.desc()).limit(max(0, limit))
        return [MemoryRow(**r._mapping) for r in self.conn.execute(stmt)]

    def history(self, scope: Scope, memory_id: str) -> list[MemoryRow]:
        """The whole supersedence chain through ``memory_id``, oldest first (history rows included)."""
        seen: dict[str, MemoryRow] = {}
        frontier = [memory_id]
        while frontier:
            found = self.fetch(scope, frontier, live=False)
            frontier = []
            for row in found.values():
                seen[row.id] = row
                frontier += [x for x in (row.supersedes, row.superseded_by) if x and x not in seen]
        return sorted(seen.values(), key=lambda r: (r.t_valid_from, r.id))

    def namespace_counts(self, root: str) -> dict[str, int]:
        """Live memories per namespace of ``root``'s subtree (the admin rule, acl.in_subtree): what an
        admin of ``root`` administers, and nothing outside it."""
        stmt = (sa.select(memories.c.namespace, sa.func.count()).where(
            in_subtree(memories.c.namespace, root), memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None))
            .group_by(memories.c.namespace).order_by(memories.c.namespace))
        return {ns: int(n) for ns, n in self.conn.execute(stmt)}

    # --- L3 concepts -------------------------------------------------------------------------
    def concepts(self, scope: Scope, query: str, embedding: Sequence[float], k: int) -> list[ScoredRef]:
        """Concepts scored 0.5 x cosine + 0.5 x the IDF-weighted share of the query's lexemes they
        hold (IDF over the caller's visible concepts): a concept naming the words that set it apart
        from the others scores high on an absolute scale. One with no query lexeme and a cosine
        below CONCEPT_MIN_COSINE is not returned at all."""
        if scope.source_scoped or k <= 0:
            return []  # fail closed: the cold tier must not widen a source-scoped request
        if not self.conn.execute(_any_concept_statement(scope)).scalar():
            return []  # most stores have few concepts or none: skip the statistics round trip
        cos = sa.func.greatest(1.0 - concepts.c.embedding.cosine_distance(list(embedding)), 0.0)
        share = lexical.term_share(self.conn, scope, " ".join(query_terms(query)), concepts)
        score = (0.5 * cos + 0.5 * share).label("score")
        stmt = (sa.select(concepts.c.namespace, concepts.c.path, concepts.c.content, score)
                .where(visible(concepts, scope), sa.or_(share > 0, cos >= CONCEPT_MIN_COSINE))
                .order_by(score.desc(), concepts.c.path, concepts.c.namespace).limit(k))
        return [ScoredRef(id=None, tier="L3", ref=concept_ref(r.namespace, r.path),
                          score=max(0.0, min(1.0, float(r.score))), content=r.content,
                          token_estimate=estimate_tokens(r.content))
                for r in self.conn.execute(stmt)]

    def relevance_features(self, scope: Scope, query: str, embedding: Sequence[float], memory_ids: Sequence[str],
                           concept_refs: Sequence[str]) -> dict[str, tuple[float, float]]:
        """(cosine, lexical share) of each ref with the query, what halomem.relevance calibrates: the
        cosine of the memory's own vector or its best passage's (as vector_search scores it), the
        concept's vector's; the IDF-weighted share of the query's lexemes the text holds
        (lexical.held_share). Refs the scope cannot read are absent."""
        if not memory_ids and not concept_refs:
            return {}
        weights = lexical.share_weights(self.conn, scope, " ".join(query_terms(query)), self._statistics)
        values = {**self._vector_values(embedding), **lexical.held_share_values(weights)}
        out: dict[str, tuple[float, float]] = {}
        if memory_ids:
            for r in self.conn.execute(_features_statement(scope), {**values, "ids": list(memory_ids)}):
                cosine = max(float(r.own) if r.own is not None else 0.0, float(r.passage or 0.0))
                out[r.id] = (cosine, float(r.share))
        if concept_refs and not scope.source_scoped:
            namespaces, paths = zip(*(ref.rpartition(":")[::2] for ref in concept_refs))
            for r in self.conn.execute(_concept_features_statement(scope),
                                       {**values, "namespaces": list(namespaces), "paths": list(paths)}):
                out[concept_ref(r.namespace, r.path)] = (float(r.cos or 0.0), float(r.share))
        return out

    def concept(self, scope: Scope, ref: str) -> dict[str, Any] | None:
        """A visible concept by its ref (``namespace:path``, one concept exactly), or by a bare path
        (the nearest: the caller's own namespace first, then its ancestors)."""
        namespace, _, path = ref.rpartition(":")
        where = visible(concepts, scope, within=namespace) if namespace else visible(concepts, scope)
        stmt = (sa.select(concepts).where(where, concepts.c.path == path)
                .order_by(sa.func.length(concepts.c.namespace).desc()).limit(1))
        row = self.conn.execute(stmt).first()
        return dict(row._mapping) if row else None

    # --- entity graph ------------------------------------------------------------------------
    def visible_entities(self, scope: Scope) -> dict[int, tuple[str, list[str]]]:
        stmt = (sa.select(entities.c.id, entities.c.name, entity_aliases.c.alias)
                .select_from(entities.outerjoin(entity_aliases, entity_aliases.c.entity_id == entities.c.id))
                .where(visible(entities, scope)).order_by(entities.c.id, entity_aliases.c.alias))
        out: dict[int, tuple[str, list[str]]] = {}
        for r in self.conn.execute(stmt):
            name, aliases = out.setdefault(r.id, (r.name, []))
            if r.alias:
                aliases.append(r.alias)
        return out

    def _facts_of(self, scope: Scope, entity_ids: Sequence[int]) -> list[tuple[str, str, int]]:
        if not entity_ids:
            return []
        stmt = (sa.select(memories.c.id, memories.c.content, mentions.c.entity_id)
                .select_from(mentions.join(memories, memories.c.id == mentions.c.memory_id))
                .where(visible(memories, scope), mentions.c.entity_id.in_(list(entity_ids)))
                .order_by(mentions.c.entity_id, memories.c.id).limit(MAX_FACTS_PER_HOP * 4))
        return [(r.id, r.content, r.entity_id) for r in self.conn.execute(stmt)]

    def entities(self, scope: Scope, limit: int) -> list[Entity]:
        """The entities the caller may see, oldest first. None for a source-scoped caller: entities
        belong to a namespace, not to a source (fail closed, as concepts)."""
        if scope.source_scoped:
            return []
        return [Entity(name, tuple(aliases)) for name, aliases in list(self.visible_entities(scope).values())[:limit]]

    def entity_facts(self, scope: Scope, mention: str, hops: int) -> list[EntityFact]:
        known = self.visible_entities(scope)
        matched = sorted(eid for eid, (name, aliases) in known.items()
                         if any(word_boundary_pattern(n).search(mention) for n in (name, *aliases)))
        facts: dict[str, EntityFact] = {}
        for ref, content, eid in self._facts_of(scope, matched):
            facts.setdefault(ref, EntityFact(ref, content, known[eid][0], 1))
        if hops >= 2 and facts:
            stmt = (sa.select(mentions.c.entity_id).distinct()
                    .select_from(mentions.join(memories, memories.c.id == mentions.c.memory_id))
                    .where(visible(memories, scope), mentions.c.memory_id.in_(list(facts)),
                           mentions.c.entity_id.not_in(matched)))
            co_mentioned = sorted(eid for (eid,) in self.conn.execute(stmt) if eid in known)
            for ref, content, eid in self._facts_of(scope, co_mentioned):
                facts.setdefault(ref, EntityFact(ref, content, known[eid][0], 2))  # hop-1 attribution wins
        return list(facts.values())


class MemoryIndex:
    """Hands out IndexReaders; driver-facing reads run in a READ ONLY transaction."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.catalog = NamespaceIndexCatalog()

    @contextmanager
    def reader(self, *, read_only: bool = True) -> Iterator[IndexReader]:
        with self.engine.connect() as conn:
            with conn.begin():
                if not read_only:
                    yield IndexReader(conn, self.catalog)
                    return
                # one round trip (statements without parameters go as one simple query): the
                # transaction's mode, the HNSW settings of the common probe, and a plan made for
                # each statement's values. The driver-facing statements are built once per shape
                # (index.lexical, _nearest_statement), so psycopg prepares them; a generic plan
                # would not know which namespace's partial indexes apply, nor how selective a
                # query's lexemes are.
                # REPEATABLE READ, memories locked before the snapshot is taken: every read of one
                # search (the store's embedder, then the vectors) sees one state of the store,
                # before or after a reembed's swap (write.reembed), never half of each
                conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; "
                                     "SET LOCAL plan_cache_mode = force_custom_plan; "
                                     "LOCK TABLE memories IN ACCESS SHARE MODE; "
                                     + _HNSW_SETTINGS.format(ef=HNSW_EF_SEARCH_MIN))
                yield IndexReader(conn, self.catalog, ef_search=HNSW_EF_SEARCH_MIN)
