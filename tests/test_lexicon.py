"""BM25 in the database: the lexicon stays exact under every write, statistics never count a row
the caller cannot read, and the scores are Okapi BM25 over the caller's visible corpus."""
import json
import math
import random
from collections import Counter

import pytest
import sqlalchemy as sa

from halomem.drivers.view import build_scoped_view
from halomem.index import Scope
from halomem.index.lexical import B, K1
from halomem.types import Namespace

TREE = ["acme", "acme/eng", "acme/eng/infra", "acme/sales", "acmex", "globex"]
WORDS = ("deploy canary rollback quota invoice pipeline latency budget cluster runbook staging outage"
         " forecast vendor roadmap ticket").split()


def _recount(kernel) -> dict[tuple[str, str], tuple[int, int]]:
    """The lexicon as it must be: counted afresh from the live rows."""
    with kernel.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT namespace, lexeme, count(*), sum(coalesce(array_length(positions, 1), 1))"
            " FROM memories, unnest(content_tsv) WHERE t_valid_to IS NULL AND erased_at IS NULL GROUP BY 1, 2"
            " UNION ALL SELECT namespace, '', count(*), sum(doc_length) FROM memories"
            " WHERE t_valid_to IS NULL AND erased_at IS NULL GROUP BY 1").all()
    return {(r[0], r[1]): (int(r[2]), int(r[3])) for r in rows}


def _lexicon(kernel) -> dict[tuple[str, str], tuple[int, int]]:
    with kernel.engine.connect() as conn:
        return {(r[0], r[1]): (int(r[2]), int(r[3]))
                for r in conn.exec_driver_sql("SELECT namespace, lexeme, docs, tokens FROM lexicon")}


def _recount_events(kernel) -> dict[tuple[str, str, object], tuple[int, int]]:
    """The lexicon's history as it must be: each row not erased +1 when born, -1 when closed."""
    with kernel.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT namespace, lexeme, at, sum(sign), sum(sign * n) FROM ("
            " SELECT namespace, lexeme, t_valid_from AS at, 1 AS sign, coalesce(array_length(positions, 1), 1) AS n"
            " FROM memories, unnest(content_tsv) WHERE erased_at IS NULL"
            " UNION ALL SELECT namespace, lexeme, t_valid_to, -1, coalesce(array_length(positions, 1), 1)"
            " FROM memories, unnest(content_tsv) WHERE erased_at IS NULL AND t_valid_to IS NOT NULL"
            " UNION ALL SELECT namespace, '', t_valid_from, 1, doc_length FROM memories WHERE erased_at IS NULL"
            " UNION ALL SELECT namespace, '', t_valid_to, -1, doc_length FROM memories"
            " WHERE erased_at IS NULL AND t_valid_to IS NOT NULL) e"
            " GROUP BY 1, 2, 3 HAVING sum(sign) <> 0 OR sum(sign * n) <> 0").all()
    return {(r[0], r[1], r[2]): (int(r[3]), int(r[4])) for r in rows}


def _events(kernel) -> dict[tuple[str, str, object], tuple[int, int]]:
    with kernel.engine.connect() as conn:
        return {(r[0], r[1], r[2]): (int(r[3]), int(r[4])) for r in
                conn.exec_driver_sql("SELECT namespace, lexeme, at, docs, tokens FROM lexicon_events")}


def _summed(events: dict[tuple[str, str, object], tuple[int, int]]) -> dict[tuple[str, str], tuple[int, int]]:
    total: dict[tuple[str, str], tuple[int, int]] = {}
    for (ns, lexeme, _), (docs, tokens) in events.items():
        d, t = total.get((ns, lexeme), (0, 0))
        total[(ns, lexeme)] = (d + docs, t + tokens)
    return {key: value for key, value in total.items() if value != (0, 0)}


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


@pytest.mark.parametrize("seed", range(3))
def test_lexicon_matches_a_recount_after_any_sequence_of_writes(kernel, seed):
    rng = random.Random(seed)
    live: dict[str, str] = {}  # id -> namespace
    for step in range(40):
        op = rng.choice(["remember", "remember", "supersede", "erase", "ingest", "keyed"])
        ns = rng.choice(TREE)
        if op == "remember" or not live and op in ("supersede", "erase"):
            live[kernel.remember(ns, _sentence(rng)).id] = ns
        elif op == "supersede":
            old = rng.choice(sorted(live))
            made = kernel.supersede(live[old], old, _sentence(rng))
            live[made.id] = live.pop(old)
        elif op == "erase":
            old = rng.choice(sorted(live))
            kernel.erase(live.pop(old), old)
        elif op == "ingest":
            for memory_id in kernel.ingest_texts(ns, [_sentence(rng) for _ in range(rng.randint(1, 5))]):
                live[memory_id] = ns
        else:  # keyed ingest: new keys, changed keys (superseded) and unchanged keys in one file
            keyed = {f"k{rng.randint(0, 6)}": rng.choice(WORDS[:3]) for _ in range(3)}
            lines = [json.dumps({"key": key, "content": content}) for key, content in keyed.items()]
            kernel.ingest_bytes("acme/eng", "\n".join(lines).encode(), fmt="jsonl")
            # a keyed row may be one `remember` was answered with (the same text: consolidation), and
            # a changed key supersedes it: keep only the heads
            with kernel.engine.connect() as conn:
                heads = set(conn.execute(sa.text("SELECT id FROM memories WHERE t_valid_to IS NULL"
                                                 " AND erased_at IS NULL")).scalars())
            live = {i: n for i, n in live.items() if i in heads}
        assert _lexicon(kernel) == _recount(kernel), f"step {step}: {op}"
        events = _events(kernel)
        assert events == _recount_events(kernel), f"step {step}: {op}"  # the history, exact
        assert _summed(events) == _lexicon(kernel), f"step {step}: {op}"  # and it sums to today's


def test_an_erased_rows_words_leave_the_lexicon(kernel):
    made = kernel.remember("acme", "zanzibarquokka met the auditor")
    kernel.remember("acme", "the auditor met the board")
    older = kernel.remember("acme", "the wallaroo ledger was audited")  # history too: superseded, then erased
    kernel.supersede("acme", older.id, "the ledger was audited")
    kernel.erase("acme", made.id)
    kernel.erase("acme", older.id)
    lexemes = {lx for _, lx in _lexicon(kernel)}
    assert not any("zanzibar" in lx for lx in lexemes)
    assert "auditor" in lexemes
    history = {lx for _, lx, _ in _events(kernel)}
    assert not any("zanzibar" in lx or "wallaroo" in lx for lx in history), history
    assert "auditor" in history and _events(kernel) == _recount_events(kernel)


def _visible_stats(kernel, caller: str, words: list[str]) -> tuple[int, float, dict[str, int]]:
    """Statistics computed independently: the rule 'own namespace and ancestors', stated here."""
    lineage = {"/".join(caller.split("/")[: i + 1]) for i in range(caller.count("/") + 1)}
    with kernel.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT namespace, doc_length, tsvector_to_array(content_tsv) FROM memories"
            " WHERE t_valid_to IS NULL AND erased_at IS NULL").all()
        stems = {w: conn.exec_driver_sql("SELECT tsvector_to_array(to_tsvector('english', %s))", (w,)).scalar()
                 for w in words}
    mine = [r for r in rows if r[0] in lineage]
    df = {w: sum(1 for r in mine if len(stems[w]) == 1 and stems[w][0] in r[2]) for w in words}
    return len(mine), (sum(r[1] for r in mine) / len(mine) if mine else 0.0), df


@pytest.mark.parametrize("seed", range(4))
def test_corpus_stats_count_exactly_the_visible_rows(kernel, seed):
    rng = random.Random(100 + seed)
    for ns in TREE:
        kernel.ingest_texts(ns, [_sentence(rng) for _ in range(rng.randint(0, 12))] or [_sentence(rng)])
    words = rng.sample(WORDS, 6) + ["the", "nonexistentword"]
    for caller in TREE:
        with kernel.index.reader() as reader:
            got = build_scoped_view(reader, Scope(Namespace(caller)), kernel.embedder).corpus_stats(words)
        documents, average, df = _visible_stats(kernel, caller, words)
        assert (got.documents, got.document_frequency) == (documents, df), caller
        assert got.average_length == pytest.approx(average)


def test_rows_a_caller_cannot_read_do_not_move_its_statistics_or_scores(kernel):
    kernel.ingest_texts("acme/eng", ["canary deploys on staging", "rollback runbook for canary", "budget review"])
    kernel.ingest_texts("acme", ["the staging cluster", "quarterly budget"])

    def observed():
        with kernel.index.reader() as reader:
            view = build_scoped_view(reader, Scope(Namespace("acme/eng")), kernel.embedder)
            return view.corpus_stats(["canary", "budget", "staging"]), view.lexical_candidates("canary budget", 20)

    before = observed()
    # siblings, descendants and look-alike prefixes full of the same words
    for ns in ("acme/sales", "acme/eng/infra", "acme-eng", "acmex/eng"):
        kernel.ingest_texts(ns, ["canary canary budget staging"] * 30)
    assert observed() == before


def _reference_bm25(kernel, caller: str, query: str) -> dict[str, float]:
    """Okapi BM25 over the caller's visible rows, from their analyzed terms, computed here."""
    lineage = ["/".join(caller.split("/")[: i + 1]) for i in range(caller.count("/") + 1)]
    with kernel.engine.connect() as conn:
        q = conn.exec_driver_sql("SELECT tsvector_to_array(to_tsvector('english', %s))", (query,)).scalar()
        rows = conn.exec_driver_sql(
            "SELECT id, (SELECT array_agg(lexeme || ' ' || coalesce(array_length(positions, 1), 1)) FROM unnest(content_tsv))"
            " FROM memories WHERE t_valid_to IS NULL AND erased_at IS NULL AND namespace = ANY(%s)", (lineage,)).all()
    counts = {r[0]: Counter({p.rsplit(" ", 1)[0]: int(p.rsplit(" ", 1)[1]) for p in (r[1] or [])}) for r in rows}
    n = len(counts)
    avgdl = sum(sum(c.values()) for c in counts.values()) / n
    out = {}
    for ref, c in counts.items():
        dl = sum(c.values())
        s = 0.0
        for term in q:
            df = sum(1 for other in counts.values() if term in other)
            if c[term]:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * c[term] * (K1 + 1) / (c[term] + K1 * (1 - B + B * dl / avgdl))
        if s > 0:
            out[ref] = s
    return out


@pytest.mark.parametrize("seed", range(3))
def test_lexical_scores_are_okapi_bm25_over_the_visible_corpus(kernel, seed):
    rng = random.Random(200 + seed)
    for ns in TREE:
        kernel.ingest_texts(ns, [_sentence(rng) for _ in range(15)])
    for caller in ("acme", "acme/eng/infra", "globex"):
        query = " ".join(rng.sample(WORDS, 3))
        with kernel.index.reader() as reader:
            got = build_scoped_view(reader, Scope(Namespace(caller)), kernel.embedder).lexical_candidates(query, 500)
        expected = _reference_bm25(kernel, caller, query)
        assert {c.ref for c in got} == set(expected)
        for c in got:
            assert c.score == pytest.approx(expected[c.ref], rel=1e-6)
        assert [c.score for c in got] == sorted((c.score for c in got), reverse=True)


def test_source_scoped_statistics_count_only_those_sources(kernel):
    kernel.ingest_texts("acme", ["canary one", "canary two", "budget"], sources=["a", "a", "b"])
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace("acme"), sources=("a",)), kernel.embedder)
        stats = view.corpus_stats(["canary", "budget"])
        hits = view.lexical_candidates("canary budget", 10)
    assert (stats.documents, stats.document_frequency) == (2, {"canary": 2, "budget": 0})
    assert len(hits) == 2


@pytest.mark.parametrize("text", ["it's \\ a 'quoted' \\' test", "a & !b | c:* <-> (d", "'' ''' \\\\",
                                  "naïve café Zürich 東京 данные", "x" * 4000, "\u200b\u202e deploy"])
def test_hostile_query_text_is_data(kernel, text):
    kernel.remember("acme", "naïve café in Zürich: deploy data, it's quoted")
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace("acme")), kernel.embedder)
        view.lexical_candidates(text, 10)
        view.corpus_stats(text.split() + [text])
    assert kernel.search("acme", text).hits is not None


def test_upgrading_a_v4_store_counts_the_rows_it_already_holds(tmp_path):
    """A store made before the lexicon (schema v4) gets the columns, a lexicon counted from its live
    rows (superseded and erased rows are not counted) and the lexicon's history (erased rows in no
    instant)."""
    import sqlalchemy as sa

    from halomem.config import Settings
    from halomem.db.embedded import ephemeral_server
    from halomem.db.migrations import LATEST, migrate
    from halomem.kernel import Kernel

    with ephemeral_server(prefix="halomem-upgrade-") as url:
        kernel = Kernel.boot(Settings(home=tmp_path, database_url=url, embedder="hash"), mount_plugins=False)
        try:
            kept = kernel.remember("acme", "canary deploys on staging")
            old = kernel.remember("acme/eng", "rollback runbook draft")
            kernel.supersede("acme/eng", old.id, "rollback runbook final")
            gone = kernel.remember("acme", "budget forecast")
            kernel.erase("acme", gone.id)
            expected, history = _recount(kernel), _events(kernel)
            assert history == _recount_events(kernel)
            with kernel.engine.begin() as conn:  # back to v4: no lexicon nor its history, no BM25 columns
                conn.exec_driver_sql("DROP TABLE lexicon, lexicon_events")
                conn.exec_driver_sql("ALTER TABLE memories DROP COLUMN term_counts, DROP COLUMN doc_length")
                conn.exec_driver_sql("UPDATE halomem_meta SET value = '4' WHERE key = 'schema_version'")
            assert migrate(kernel.engine, "hash", kernel.embedder.dim) == 4
            assert _lexicon(kernel) == expected and LATEST >= 12
            assert _events(kernel) == history  # v12 made the history from the rows' validity times
            with kernel.engine.connect() as conn:
                assert conn.execute(sa.text("SELECT doc_length FROM memories WHERE id = :i"), {"i": kept.id}).scalar() == 3
            assert [c.ref for c in kernel.search("acme/eng", "canary rollback").hits][:2]
        finally:
            kernel.close()
