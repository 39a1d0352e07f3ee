"""A memory's place in its source (write.places), handed to drivers, and fusion's neighbour context."""
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from halomem.drivers.view import build_scoped_view
from halomem.index import Scope
from halomem.retrieval import gather_pool, with_neighbour_context
from halomem.sandbox import wire
from halomem.types import Candidate, Namespace, RetrieverQuery, VectorHit


def _places(kernel, ids):
    with kernel.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT id, position FROM memories WHERE id = ANY(:ids)"), {"ids": list(ids)})
        found = dict(rows.all())
    return [found[i] for i in ids]


def test_neighbour_score_raises_a_memory_and_stays_normalized():
    scores = {"t1": 0.9, "t2": 0.2, "t3": 0.4, "t5": 0.2, "other": 0.2, "lone": 0.2}
    source = {"t1": "s", "t2": "s", "t3": "s", "t5": "s", "other": "x", "lone": None}
    position = {"t1": 1, "t2": 2, "t3": 3, "t5": 5, "other": 3, "lone": None}
    out = with_neighbour_context(scores, source, position, weight=0.3)
    assert out["t2"] == pytest.approx((0.2 + 0.3 * 0.9) / 1.3)  # the better of t1 and t3
    assert out["t1"] == pytest.approx((0.9 + 0.3 * 0.2) / 1.3)
    assert out["t5"] == out["other"] == out["lone"] == pytest.approx(0.2 / 1.3)  # no scored neighbour
    assert all(0.0 <= v <= 1.0 for v in out.values())
    # a host that sends no places: every memory is only rescaled, the order is kept
    assert with_neighbour_context(scores, source, {}, weight=0.3) == {k: pytest.approx(v / 1.3) for k, v in scores.items()}


def test_places_count_per_namespace_and_source_in_write_order(kernel):
    a1 = kernel.remember("acme/eng", "standup: the deploy moved", source="meeting:standup").id
    b1 = kernel.remember("acme/eng", "retro: fewer pages", source="meeting:retro").id
    a2 = kernel.remember("acme/eng", "standup: Ana takes the rollback", source="meeting:standup").id
    none = kernel.remember("acme/eng", "no source here").id
    other_ns = kernel.remember("acme/hr", "standup in hr", source="meeting:standup").id
    bulk = kernel.ingest_texts("acme/eng", ["standup: three", "retro: two", "standup: four", "loose"],
                               sources=["meeting:standup", "meeting:retro", "meeting:standup", None])
    assert _places(kernel, [a1, b1, a2, none, other_ns]) == [1, 1, 2, None, 1]
    assert _places(kernel, bulk) == [3, 2, 4, None]


def test_a_successor_keeps_its_place_unless_it_moves_to_another_source(kernel):
    ns = "acme/eng"
    turns = [kernel.remember(ns, f"turn {i}", source="chat:1").id for i in range(3)]
    fixed = kernel.supersede(ns, turns[1], "turn 1, corrected").id  # the source carries over
    moved = kernel.supersede(ns, turns[2], "turn 2, filed elsewhere", source="chat:2").id
    assert _places(kernel, [turns[1], fixed, moved]) == [2, 2, 1]
    # place 3 stays taken by the moved turn's old version: the next turn of chat:1 goes after it
    assert _places(kernel, [kernel.remember(ns, "turn 3", source="chat:1").id]) == [4]


def test_keyed_ingest_keeps_places_of_changed_lines(kernel, tmp_path):
    ns = "acme/eng"
    doc = tmp_path / "runbook.jsonl"

    def write(lines):
        doc.write_text("\n".join(json.dumps({"content": c, "source": "doc:runbook", "key": k}) for k, c in lines))
        return kernel.ingest(ns, doc)

    write([("s1", "step one: drain"), ("s2", "step two: deploy"), ("s3", "step three: verify")])
    report = write([("s1", "step one: drain"), ("s2", "step two: deploy the canary"), ("s3", "step three: verify"),
                    ("s4", "step four: announce")])
    with kernel.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT content, position FROM memories WHERE namespace = :ns"
                                    " AND t_valid_to IS NULL ORDER BY position"), {"ns": ns}).all()
    assert [tuple(r) for r in rows] == [("step one: drain", 1), ("step two: deploy the canary", 2),
                                        ("step three: verify", 3), ("step four: announce", 4)]
    assert (report.written, len(report.unchanged), len(report.superseded)) == (2, 2, 1)


def test_erasing_takes_the_place_away_with_the_source(kernel):
    gone = kernel.remember("acme/eng", "a turn to forget", source="chat:9").id
    kernel.erase("acme/eng", gone)
    with kernel.engine.connect() as conn:
        row = conn.execute(sa.text("SELECT source, position FROM memories WHERE id = :i"), {"i": gone}).one()
    assert tuple(row) == (None, None)


def test_concurrent_writers_of_one_source_get_distinct_places(kernel):
    def write(n):
        return [kernel.remember("acme/eng", f"writer {n} line {i}", source="chat:busy").id for i in range(5)]

    with ThreadPoolExecutor(max_workers=6) as pool:  # a writer's error is raised by result()
        ids = [i for batch in [f.result() for f in [pool.submit(write, n) for n in range(6)]] for i in batch]
    assert sorted(_places(kernel, ids)) == list(range(1, 31))


def test_the_view_hands_drivers_each_row_place_and_the_wire_keeps_it(kernel):
    ns = "acme/eng"
    first = kernel.remember(ns, "Ana: did the canary deploy pass?", source="chat:7").id
    reply = kernel.remember(ns, "Bo: yes, green on every region", source="chat:7").id
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace(ns)), kernel.embedder)
        pool = gather_pool(view, "canary deploy", vector_k=10)
        window = {c.ref: c.position for c in view.candidates(10)}
        lexical = view.lexical_candidates("canary deploy", 10)
        hits = view.vector_search(view.embed(["canary deploy"])[0], 10)
    assert pool.position == {first: 1, reply: 2} and window == {first: 1, reply: 2}
    assert {c.ref: c.position for c in lexical} == {first: 1}
    assert {h.ref: h.position for h in hits} == {first: 1, reply: 2}
    # what the isolated worker rebuilds from the wire rows is the same object
    assert [Candidate(*row) for row in json.loads(json.dumps(wire.candidates_out(lexical)))] == lexical
    assert [VectorHit(*row) for row in json.loads(json.dumps(wire.vector_hits_out(hits)))] == hits


def test_fusion_raises_the_reply_beside_a_matching_turn(kernel):
    ns = "acme/eng"
    kernel.remember(ns, "Ana: did the canary deploy pass on staging?", source="chat:1")
    reply = kernel.remember(ns, "Bo: it passed, all green", source="chat:1").id
    kernel.remember(ns, "Cy: lunch is at noon", source="chat:2")
    stray = kernel.remember(ns, "Dee: it passed, all green", source="chat:2").id  # the same words, elsewhere
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace(ns)), kernel.embedder)
        refs = kernel.registry.get("fusion").plan(RetrieverQuery("did the canary deploy pass", view, 2000, 5))
    score = {r.ref: r.score for r in refs}
    assert score[reply] > score[stray]


def test_upgrading_a_v5_store_leaves_old_rows_without_a_place(tmp_path):
    from halomem.config import Settings
    from halomem.db.embedded import ephemeral_server
    from halomem.db.migrations import migrate
    from halomem.kernel import Kernel

    with ephemeral_server(prefix="halomem-upgrade-") as url:
        kernel = Kernel.boot(Settings(home=tmp_path, database_url=url, embedder="hash"), mount_plugins=False)
        try:
            old = kernel.remember("acme", "an old turn", source="chat:1").id
            with kernel.engine.begin() as conn:  # back to v5: no places
                conn.exec_driver_sql("DROP INDEX memories_source_position_idx")
                conn.exec_driver_sql("ALTER TABLE memories DROP COLUMN position")
                conn.exec_driver_sql("UPDATE halomem_meta SET value = '5' WHERE key = 'schema_version'")
            assert migrate(kernel.engine, "hash", kernel.embedder.dim) == 5
            new = kernel.remember("acme", "a new turn", source="chat:1").id
            assert _places(kernel, [old, new]) == [None, 1]
            assert [h.ref for h in kernel.search("acme", "turn").hits]  # old rows still rank
        finally:
            kernel.close()
