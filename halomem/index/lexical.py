"""BM25 in the database, with corpus statistics over exactly what the caller may read.

The write path prepares each row's inputs once (schema.memories.term_counts, doc_length: generated
columns) and keeps per-namespace statistics (schema.lexicon). A query is then two round trips:
the query's lexemes with their visible document frequencies, and one statement that ranks rows by
Okapi BM25 (k1 = 1.2, b = 0.75, IDF and average length over the caller's lineage) and returns the
best with their content. Nothing is tokenized in Python and no long text is shipped to be scored,
so the cost no longer grows with document length (docs/bench/latency.md, long corpus).

Which rows are ranked is bounded (MaxScore-style pruning by document frequency): every visible row
holding one of the query's rarer lexemes (each in at most RARE_TERM_DOCS rows, together at most
RARE_DOCS), the rows holding every
lexeme (up to COMMON_CAP per index group), and the newest rows holding the common ones (COMMON_CAP
shared equally by the caller's namespaces). A row holding only common lexemes scores at most the
sum of their small IDFs, so it rarely belongs in the top; while the rarer lexemes' rows are all the
matches, the ranking is exact.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import sqlalchemy as sa
from pgvector.sqlalchemy import SPARSEVEC
from sqlalchemy.dialects.postgresql import ARRAY, TSQUERY, distinct_on
from sqlalchemy.engine import Connection

from ..db.migrations import TERM_DIMS
from ..db.schema import TEXT_SEARCH_CONFIG, lexicon, lexicon_events, memories
from ..retrieval.bm25 import idf as okapi_idf
from ..types import Candidate, CorpusStats, Namespace
from .acl import Scope, visible

K1 = 1.2
B = 0.75
RARE_DOCS = 1000  # rows the rare lexemes may bring, all told
RARE_TERM_DOCS = 500  # a lexeme in more rows than this is common: its rows are sampled, not all ranked
COMMON_CAP = 100
MAX_STATS_TERMS = 256
# what a Candidate or VectorHit is read from, in every statement that hands rows to a driver
CANDIDATE_COLUMNS = (memories.c.id, memories.c.content, memories.c.source, memories.c.position)


@dataclass(frozen=True)
class QueryTerm:
    lexeme: str
    dim: int  # its sparse dimension in term_counts
    docs: int  # visible rows holding it


@dataclass(frozen=True)
class Statistics:
    documents: int
    total_length: int
    terms: list[QueryTerm]

    @property
    def average_length(self) -> float:
        return self.total_length / self.documents if self.documents else 0.0

    def idf(self, docs: int) -> float:
        return okapi_idf(self.documents, docs)


def tsquery_literal(lexemes: Sequence[str], operator: str) -> str:
    """A tsquery of exact lexemes, each quoted (quotes and backslashes doubled): data, never syntax."""
    quoted = ("'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexemes)
    return f" {operator} ".join(quoted)


def _lexemes(text: str | sa.ColumnElement[str]) -> sa.ColumnElement[Any]:
    """The lexemes PostgreSQL's analyzer makes of ``text`` (the one analyzer: the rows' too)."""
    return sa.func.tsvector_to_array(sa.func.to_tsvector(sa.literal_column(f"'{TEXT_SEARCH_CONFIG}'"), text))


def _as_tsquery(lexemes: Sequence[str], operator: str) -> sa.ColumnElement[Any]:
    return sa.cast(sa.literal(tsquery_literal(lexemes, operator)), TSQUERY)


def statistics(conn: Connection, scope: Scope, text: str, memo: dict | None = None) -> Statistics:
    """The lexemes of ``text`` with their document frequency, and the document count and total
    length, over the rows ``scope`` may read. The lexicon counts today's rows of whole namespaces:
    a source-scoped caller's are counted over its own rows; an as-of caller's are today's minus the
    lexicon's events since its instant (few, for a recent one), exactly what counting the rows
    valid then would give. ``memo``: one reader's answers (one snapshot), so a search asks once per
    text whichever of its steps asks (the BM25 lane, the evidence share, the relevance features)."""
    if memo is not None:
        key = (scope, text)
        if key not in memo:
            memo[key] = statistics(conn, scope, text)
        return memo[key]
    if scope.source_scoped:
        q = sa.select(sa.func.unnest(_lexemes(text)).label("lexeme")).subquery("q")
        return _counted_statistics(conn, scope, q)
    documents, total, terms = 0, 0, []
    for r in conn.execute(_statistics_statement(tuple(scope.namespace.lineage())), {"text": text}):
        if r.lexeme == "":
            documents, total = int(r.docs), int(r.tokens)
        else:
            terms.append(QueryTerm(r.lexeme, int(r.dim), int(r.docs)))
    if scope.as_of is not None:
        documents, total, terms = _as_of(conn, scope, documents, total, terms)
    return Statistics(documents, total, sorted(terms, key=lambda t: (t.docs, t.lexeme)))


def _as_of(conn: Connection, scope: Scope, documents: int, total: int,
           terms: list[QueryTerm]) -> tuple[int, int, list[QueryTerm]]:
    """Today's counts made the instant's: minus the lexicon's events after it (schema.lexicon_events:
    what each write since changed, in the scope's namespaces), one index range per lexeme."""
    since = {r.lexeme: (int(r.docs), int(r.tokens)) for r in conn.execute(_EVENTS_SINCE, {
        "lineage": scope.namespace.lineage(), "lexemes": ["", *(t.lexeme for t in terms)], "as_of": scope.as_of})}
    rows, length = since.get("", (0, 0))
    return (documents - rows, total - length,
            [QueryTerm(t.lexeme, t.dim, t.docs - since.get(t.lexeme, (0, 0))[0]) for t in terms])


# the net docs and tokens per lexeme that the writes after ``as_of`` made in the lineage's namespaces
_EVENTS_SINCE = (
    sa.select(lexicon_events.c.lexeme, sa.func.sum(lexicon_events.c.docs).label("docs"),
              sa.func.sum(lexicon_events.c.tokens).label("tokens"))
    .where(lexicon_events.c.namespace == sa.func.any(sa.bindparam("lineage", type_=ARRAY(sa.Text))),
           lexicon_events.c.lexeme == sa.func.any(sa.bindparam("lexemes", type_=ARRAY(sa.Text))),
           lexicon_events.c.at > sa.bindparam("as_of", type_=sa.DateTime(timezone=True)))
    .group_by(lexicon_events.c.lexeme))


@functools.lru_cache(maxsize=256)
def _statistics_statement(lineage: tuple[str, ...]) -> sa.Select[Any]:
    """statistics() for callers with this lineage, the text a parameter (built once, as in ranked)."""
    q = sa.select(sa.func.unnest(_lexemes(sa.bindparam("text", type_=sa.Text))).label("lexeme")).subquery("q")
    wanted = sa.union_all(sa.select(q.c.lexeme), sa.select(sa.literal("").label("lexeme"))).subquery("w")
    return (sa.select(wanted.c.lexeme, sa.func.halomem_term_dim(wanted.c.lexeme).label("dim"),
                      sa.func.coalesce(sa.func.sum(lexicon.c.docs), 0).label("docs"),
                      sa.func.coalesce(sa.func.sum(lexicon.c.tokens), 0).label("tokens"))
            .select_from(wanted.outerjoin(lexicon, sa.and_(lexicon.c.lexeme == wanted.c.lexeme,
                                                           visible(lexicon, Scope(Namespace(lineage[-1]))))))
            .group_by(wanted.c.lexeme))


def _counted_statistics(conn: Connection, scope: Scope, q: sa.Subquery) -> Statistics:
    """A source-scoped caller's statistics, counted over its own rows: the lexicon is kept per
    namespace, and a namespace's counts would include the rows of sources outside the scope."""
    found = conn.execute(sa.select(q.c.lexeme, sa.func.halomem_term_dim(q.c.lexeme))).all()
    total = sa.func.coalesce(sa.func.sum(memories.c.doc_length), 0)
    documents, docs, (length,) = _holding(conn, memories, scope, [lexeme for lexeme, _ in found], total)
    terms = [QueryTerm(lexeme, int(dim), n) for (lexeme, dim), n in zip(found, docs)]
    return Statistics(documents, int(length), sorted(terms, key=lambda t: (t.docs, t.lexeme)))


def _holding(conn: Connection, table: sa.Table, scope: Scope, lexemes: Sequence[str],
             *extra: sa.ColumnElement[Any]) -> tuple[int, list[int], tuple[Any, ...]]:
    """Counted over the visible rows of ``table``: how many there are, how many hold each lexeme,
    and any ``extra`` aggregates, in one scan."""
    tsv = table.c.content_tsv
    holding = [sa.func.count().filter(tsv.op("@@")(_as_tsquery([lx], "|"))) for lx in lexemes]
    row = conn.execute(sa.select(sa.func.count(), *holding, *extra).where(visible(table, scope))).one()
    return int(row[0]), [int(n) for n in row[1:1 + len(lexemes)]], tuple(row[1 + len(lexemes):])


def ranked(conn: Connection, scope: Scope, groups: tuple[tuple[str, ...], ...], text: str,
           limit: int, memo: dict | None = None) -> list[Candidate]:
    """Up to ``limit`` visible rows holding query lexemes, best BM25 first, with their scores."""
    stats = statistics(conn, scope, text, memo)
    terms = [t for t in stats.terms if t.docs > 0]
    if not terms or limit <= 0 or stats.documents == 0:
        return []
    rare: list[QueryTerm] = []
    for term in terms:  # rarest first
        if term.docs > RARE_TERM_DOCS or sum(t.docs for t in rare) + term.docs > RARE_DOCS:
            break
        rare.append(term)
    common = terms[len(rare):]
    stmt = _ranking_statement(scope, groups, len(terms), len(rare), limit, COMMON_CAP)
    avgdl = stats.average_length or 1.0
    values: dict[str, Any] = {
        "all_terms": tsquery_literal([t.lexeme for t in terms], "&"),
        "rare_terms": tsquery_literal([t.lexeme for t in rare], "|"),
        "common_terms": tsquery_literal([t.lexeme for t in common], "|"),
        "length_weight": K1 * B / avgdl,
        **{f"dim{i}": f"{{{int(t.dim)}:1}}/{TERM_DIMS}" for i, t in enumerate(terms)},
        **{f"idf{i}": stats.idf(t.docs) * (K1 + 1.0) for i, t in enumerate(terms)},
    }
    return [Candidate(r.id, r.content, r.source, float(r.score), r.position) for r in conn.execute(stmt, values)]


@functools.lru_cache(maxsize=512)
def _ranking_statement(scope: Scope, groups: tuple[tuple[str, ...], ...], n_terms: int, n_rare: int,
                       limit: int, common_cap: int) -> sa.Select[Any]:
    """The ranking statement of one query shape, its values left as parameters (see ranked()).

    Built once per caller, index grouping and shape rather than per query: building this many
    SQLAlchemy expressions took longer than PostgreSQL took to run them (docs/bench/latency.md).
    """
    # each row's count of each query lexeme, read once from its sparse vector
    counts = [(-memories.c.term_counts.op("<#>", return_type=sa.Float)(
        sa.cast(sa.bindparam(f"dim{i}", type_=sa.Text), SPARSEVEC))).label(f"c{i}") for i in range(n_terms)]

    def matching(terms: str, group: Sequence[str]) -> sa.Select[Any]:
        return sa.select(*CANDIDATE_COLUMNS, memories.c.doc_length, *counts).where(
            visible(memories, scope, within=group),
            memories.c.content_tsv.op("@@")(sa.cast(sa.bindparam(terms, type_=sa.Text), TSQUERY)))

    branches = [matching("rare_terms", group) for group in groups] if n_rare else []
    if n_terms > n_rare:
        if n_terms > 1:  # rows holding every lexeme, however common each is
            branches += [matching("all_terms", group).limit(common_cap) for group in groups]
        # and the newest rows holding the common ones, an equal share from each visible namespace,
        # so a crowded ancestor cannot push the caller's own rows out
        lineage = scope.namespace.lineage()
        share = -(-common_cap // len(lineage))
        branches += [matching("common_terms", [ns]).order_by(memories.c.t_valid_from.desc()).limit(share)
                     for ns in lineage]
    found = (sa.union_all(*branches) if len(branches) > 1 else branches[0]).subquery("found")
    # each found row once (a row may be found by several branches), its content carried along from
    # the scan that found it: joining the top rows back to memories cost a fetch per row (1M short
    # corpus: 0.5-0.8 ms of a 7 ms lexical_candidates)
    scored = (sa.select(*(found.c[c.name] for c in CANDIDATE_COLUMNS), _bm25(n_terms, found).label("score"))
              .ext(distinct_on(found.c.id)).order_by(found.c.id).subquery("scored"))
    return sa.select(scored).order_by(scored.c.score.desc(), scored.c.id).limit(limit)


def _bm25(n_terms: int, found: sa.Subquery) -> sa.ColumnElement[float]:
    """Okapi BM25 of a found row from its per-lexeme counts (columns c0..cN) and its length; each
    lexeme's IDF x (k1 + 1) and k1 x b / average length are parameters."""
    norm = K1 * (1.0 - B) + sa.bindparam("length_weight", type_=sa.Float) * sa.cast(found.c.doc_length, sa.Float)
    parts = [sa.bindparam(f"idf{i}", type_=sa.Float) * found.c[f"c{i}"] / (found.c[f"c{i}"] + norm)
             for i in range(n_terms)]
    return sum(parts[1:], parts[0])


def share_weights(conn: Connection, scope: Scope, text: str, memo: dict | None = None) -> list[tuple[str, float]]:
    """Each of ``text``'s lexemes with its share (summing to 1) of the query's IDF, IDF from the
    lexicon over the memories ``scope`` reads (statistics: what tells a memory apart; a lexeme no
    visible memory holds, or a stop word, weighs nothing)."""
    stats = statistics(conn, scope, text, memo)
    weights = [(t.lexeme, stats.idf(t.docs)) for t in stats.terms if t.docs > 0]
    total = sum(w for _, w in weights)
    return [(lx, w / total) for lx, w in weights] if total > 0 else []


def held_share(tsv: sa.ColumnElement[Any]) -> sa.ColumnElement[float]:
    """SQL for the share (0..1) of the query's weighted lexemes (share_weights) a row's ``tsv``
    holds: the same weights for memories and concepts, so their shares compare. The lexemes and
    their weights are array parameters (held_share_values), so a statement holding it is built once."""
    weighted = sa.func.unnest(sa.bindparam("lexemes", type_=ARRAY(sa.Text)),
                              sa.bindparam("weights", type_=ARRAY(sa.Float))).table_valued("lexeme", "weight") \
        .render_derived(name="w")
    return (sa.select(sa.func.coalesce(sa.func.sum(weighted.c.weight), 0.0))
            .where(weighted.c.lexeme == sa.func.any(sa.func.tsvector_to_array(tsv))).scalar_subquery())


def held_share_values(weights: Sequence[tuple[str, float]]) -> dict[str, list[Any]]:
    """held_share's parameters for ``weights`` (share_weights)."""
    return {"lexemes": [lx for lx, _ in weights], "weights": [w for _, w in weights]}


def term_share(conn: Connection, scope: Scope, text: str, table: sa.Table) -> sa.ColumnElement[float]:
    """SQL for the IDF-weighted share (0..1) of ``text``'s lexemes that a row of ``table`` holds in
    its content_tsv, IDF over the visible rows of ``table``: what tells its rows apart (a word every
    concept title has, such as 'work', weighs little). Lexemes no visible row holds are left out,
    since they cannot tell any row apart."""
    lexemes = conn.execute(sa.select(sa.func.unnest(_lexemes(text)))).scalars().all()
    if not lexemes:
        return sa.literal(0.0, sa.Float)
    n, docs, _ = _holding(conn, table, scope, lexemes)
    tsv = table.c.content_tsv
    weights = [(lx, okapi_idf(n, d)) for lx, d in zip(lexemes, docs) if d > 0]
    total = sum(w for _, w in weights)
    if total <= 0:
        return sa.literal(0.0, sa.Float)
    parts = [sa.case((tsv.op("@@")(_as_tsquery([lx], "|")), w / total), else_=0.0) for lx, w in weights]
    return sum(parts[1:], parts[0])


def corpus_stats(conn: Connection, scope: Scope, words: Sequence[str], memo: dict | None = None) -> CorpusStats:
    """Document count, average length and per-word document frequency over the visible rows.

    Each word is analyzed as a row's text is, so its frequency is that of its stem ('deploys' and
    'deploy' agree); a stopword, or a word whose stem is seen nowhere visible, has frequency 0.
    Within one reader, statistics already read for the query (the BM25 lane's) answer when they
    hold every lexeme asked for: the same snapshot, so the same counts.
    """
    words = list(dict.fromkeys(str(w) for w in words))[:MAX_STATS_TERMS]
    analyzed = word_lexemes(conn, words)
    single = {word: lexemes[0] for word, lexemes in analyzed.items() if len(lexemes) == 1}
    stats = _statistics_holding(memo, scope, set(single.values()))
    if stats is None:
        stats = statistics(conn, scope, " ".join(words), memo)
    docs = {t.lexeme: t.docs for t in stats.terms}
    out = {word: docs.get(single[word], 0) if word in single else 0 for word in words}
    return CorpusStats(stats.documents, stats.average_length, out)


def _statistics_holding(memo: dict | None, scope: Scope, lexemes: set[str]) -> Statistics | None:
    """Statistics this reader already read for ``scope`` that count every one of ``lexemes``."""
    for (seen_scope, _text), stats in (memo or {}).items():
        if seen_scope == scope and lexemes <= {t.lexeme for t in stats.terms}:
            return stats
    return None


_WORD_LEXEMES: dict[str, tuple[str, ...]] = {}
_WORD_LEXEMES_MAX = 1 << 16  # words remembered (then forgotten all at once)
_REMEMBERED_WORD_CHARS = 64  # a longer "word" (a driver may send any) is analyzed, never kept


def word_lexemes(conn: Connection, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The lexemes PostgreSQL's analyzer makes of each word alone. Remembered per process: the
    analysis depends on the word and the text search configuration only (the one every server of
    a store uses: TEXT_SEARCH_CONFIG), and a query's words repeat from search to search."""
    found = {w: _WORD_LEXEMES[w] for w in words if w in _WORD_LEXEMES}
    missing = [w for w in words if w not in found]
    if missing:
        w = sa.select(sa.func.unnest(sa.cast(missing, ARRAY(sa.Text))).label("word")).subquery("w")
        for word, lexemes in conn.execute(sa.select(w.c.word, _lexemes(w.c.word))):
            found[word] = tuple(lexemes)
        if len(_WORD_LEXEMES) + len(missing) > _WORD_LEXEMES_MAX:
            _WORD_LEXEMES.clear()
        _WORD_LEXEMES.update((w, found[w]) for w in missing if len(w) <= _REMEMBERED_WORD_CHARS and w in found)
    return {word: found.get(word, ()) for word in words}
