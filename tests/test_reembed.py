"""`halomem reembed` on a live store: SIGKILL mid-way then resume; a server searching and writing
throughout gets results from exactly one embedder; ids, chains and the audit trail unchanged."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2
import pytest

from halomem.config import Settings
from halomem.embed import get_embedder
from halomem.kernel import Kernel
from halomem.ops import for_operator
from tests.serving import bearer, start_server

ROWS = 360  # at most 400 rows a namespace: the vector lane scans them exactly, so answers are repeatable
QUERIES = ["who fixed the build pipeline", "lunch plans for the offsite", "payments incident review"]
TOPICS = ["the build pipeline broke and Ana fixed the cache", "the offsite lunch will be tacos",
          "the payments incident review found a retry storm", "Kai renewed the TLS certificates",
          "the roadmap moved the search launch to spring", "Lee documented the on-call rotation"]


def _cli(env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def _rows(kernel: Kernel) -> list[tuple]:
    with kernel.engine.connect() as conn:
        return [tuple(r) for r in conn.exec_driver_sql(
            "SELECT id, namespace, supersedes, superseded_by, t_valid_from, t_valid_to, erased_at, content"
            " FROM memories ORDER BY id")]


def _hits(http: httpx2.Client, query: str) -> tuple[str, ...]:
    answer = http.post("/v1/search", json={"query": query, "k": 5, "driver": "baseline"})
    assert answer.status_code == 200, answer.text
    return tuple(h["id"] for h in answer.json()["hits"])


@pytest.fixture()
def store(tmp_path: Path):  # noqa: ANN201
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
    env["HALOMEM_HOME"] = str(tmp_path / "home")
    kernel = Kernel.boot(Settings(home=tmp_path / "home", embedder="hash"))
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"content": f"Note {i}: {TOPICS[i % len(TOPICS)]} (ticket {i * 7})."})
                            + "\n" for i in range(ROWS)))
    kernel.ingest("acme/eng", docs)
    kernel.remember("acme/eng", "Long memo. " + " ".join(TOPICS * 40))  # passages, in both spaces
    yield env, kernel
    kernel.close()
    _cli(env, "db", "stop")


def test_reembed_survives_sigkill_and_swaps_atomically_under_a_live_server(store) -> None:  # noqa: ANN001
    env, kernel = store
    first = kernel.remember("acme/eng", "The first version of the deploy checklist.")
    head = kernel.supersede("acme/eng", first.id, "The second version of the deploy checklist.")
    gone = kernel.remember("acme/eng", "A note that will be erased during the migration.")
    kernel.put_concept("acme", "handbook/oncall", "Who is on call is in the rotation doc.")
    kernel.index_namespace("acme/eng")
    token = for_operator(kernel, "acme/eng").create_token(None, "reembed-test", "read,write", None).token
    writer = for_operator(kernel, "acme/ops").create_token(None, "reembed-writer", "read,write", None).token
    before = _rows(kernel)

    # the first run, killed once some batches are committed
    killed = subprocess.Popen([sys.executable, "-m", "halomem.cli.main", "reembed", "--embedder", "static",
                               "--batch", "2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and done < 100:
        time.sleep(0.05)
        with kernel.engine.connect() as conn:
            exists = conn.exec_driver_sql("SELECT count(*) FROM information_schema.columns WHERE"
                                          " table_name = 'memories' AND column_name = 'embedding_next'").scalar()
            if exists:
                done = conn.exec_driver_sql("SELECT count(*) FROM memories WHERE embedding_next IS NOT NULL").scalar()
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    assert 100 <= done < ROWS, "the kill landed mid-way"

    server = start_server(env, "--rate-limit", "0")
    try:
        with httpx2.Client(base_url=server.url, headers=bearer(token), timeout=30) as http, \
                httpx2.Client(base_url=server.url, headers=bearer(writer), timeout=30) as sibling:
            erased = http.post(f"/v1/memories/{gone.id}/erase", json={"reason": "test"})
            assert erased.status_code == 200, erased.text
            old = {q: _hits(http, q) for q in QUERIES}  # the store still answers with hash
            seen: list[tuple[str, tuple[str, ...]]] = []
            written: list[str] = []
            stop = threading.Event()

            def search_and_write() -> None:
                i = 0
                while not stop.is_set():
                    q = QUERIES[i % len(QUERIES)]
                    seen.append((q, _hits(http, q)))
                    if i % 10 == 0:
                        # writes go on (in a sibling namespace: acme/eng's answers stay comparable)
                        made = sibling.post("/v1/memories", json={"content": f"Written during the migration {i}."})
                        assert made.status_code == 201, made.text
                        written.append(made.json()["id"])
                    i += 1

            worker = threading.Thread(target=search_and_write)
            worker.start()
            resumed = _cli(env, "reembed", "--embedder", "static", "--batch", "200", "--json")
            stop.set()
            worker.join(timeout=60)
            assert resumed.returncode == 0, resumed.stderr
            report = json.loads(resumed.stdout)
            assert report["resumed"] is True and report["to"] == "static:minilm-l6-v2-static/256"
            assert report["from"] == "hash/256" and report["concepts"] == 1 and report["passages"] > 0
            new = {q: _hits(http, q) for q in QUERIES}  # the server followed the swap
            assert any(old[q] != new[q] for q in QUERIES)
            assert all(hits in (old[q], new[q]) for q, hits in seen), "a search mixed two embedders"
            assert len(seen) > 10 and written
            late = sibling.post("/v1/memories", json={"content": "Written after the swap."})  # redone with static
            assert late.status_code == 201, late.text
            written.append(late.json()["id"])
    finally:
        server.stop()

    after = {r[0]: r for r in _rows(kernel)}
    for row in before:  # ids, chains, validity and content unchanged (the erased row aside)
        if row[0] != gone.id:
            assert after[row[0]] == row
    assert after[gone.id][6] is not None and after[gone.id][7] == ""
    assert kernel.embedder.name == "hash"  # this kernel booted before the swap; at its next read it follows
    assert kernel.search("acme/eng", "deploy checklist").hits
    assert kernel.embedder.name == "static:minilm-l6-v2-static"
    static = get_embedder("static")
    with kernel.engine.connect() as conn:
        stored = dict(conn.exec_driver_sql("SELECT id, embedding::text FROM memories WHERE id = ANY(%s)",
                                           ([written[0], written[-1], head.id],)).all())
        assert not conn.exec_driver_sql("SELECT count(*) FROM memories WHERE erased_at IS NULL AND content <> ''"
                                        " AND embedding IS NULL").scalar()
        assert conn.exec_driver_sql("SELECT embedding FROM memories WHERE id = %s", (gone.id,)).scalar() is None
        assert not conn.exec_driver_sql("SELECT count(*) FROM passages WHERE memory_id = %s", (gone.id,)).scalar()
        indexes = dict(conn.exec_driver_sql(
            "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
            " WHERE c.relname LIKE '%%embedding%%' OR c.relname LIKE 'memories_ns_vec_%%'").all())
        concept = conn.exec_driver_sql("SELECT embedding::text FROM concepts").scalar()
        leftovers = conn.exec_driver_sql("SELECT count(*) FROM information_schema.columns"
                                         " WHERE column_name = 'embedding_next'").scalar()
    for memory_id, text in ((written[0], "Written during the migration 0."), (written[-1], "Written after the swap."),
                            (head.id, "The second version of the deploy checklist.")):
        vector = json.loads(stored[memory_id])
        assert max(abs(a - b) for a, b in zip(vector, static.embed([text])[0])) < 1e-4
    assert max(abs(a - b) for a, b in zip(json.loads(concept), static.embed(
        ["handbook/oncall Who is on call is in the rotation doc."])[0])) < 1e-4
    assert leftovers == 0
    assert {"memories_embedding_idx", "passages_embedding_idx"} <= set(indexes)
    assert all("(embedding vector_cosine_ops)" in d for d in indexes.values())
    assert kernel.namespace_indexes() == ["acme/eng"]
    verify = _cli(env, "audit", "verify")
    assert verify.returncode == 0, verify.stderr
    trail = json.loads(_cli(env, "audit", "tail", "--json", "-n", "100", "--action", "reembed").stdout)
    assert [r["detail"].split(" ")[:2] for r in trail] == [["reembed", "ok"]]  # one row: the swap's
    again = _cli(env, "reembed", "--embedder", "static")
    assert again.returncode == 5 and "already uses embedder" in again.stderr


class _ErasingWhileEmbedding:
    """The target embedder, which erases memories (through the kernel, its own transaction) while
    their batch is being embedded: after the batch read them, before it writes their vectors back."""

    def __init__(self, target, kernel: Kernel, victims: dict[str, str]) -> None:  # noqa: ANN001
        self._target, self._kernel, self._victims = target, kernel, dict(victims)  # content -> id

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._target, name)

    def embed(self, texts):  # noqa: ANN001, ANN201
        for text in texts:
            victim = self._victims.pop(text, None)
            if victim is not None:
                self._kernel.erase("acme/eng", victim, reason="raced")  # committed before the batch writes
        return self._target.embed(texts)


def test_an_erase_during_a_reembed_batch_leaves_nothing_after_the_swap(store) -> None:  # noqa: ANN001
    """Erasure is final during reembed: memories erased while their batch embeds them, a long one
    with passages among them, keep no vector, passage or text after the swap."""
    env, kernel = store
    secret = "Long secret memo. " + " ".join(TOPICS * 40)
    long_one = kernel.remember("acme/eng", secret).id
    with kernel.engine.connect() as conn:
        firsts = [tuple(r) for r in conn.exec_driver_sql(
            "SELECT content, id FROM memories WHERE erased_at IS NULL ORDER BY id LIMIT 2")]
    victims = {secret: long_one, **dict(firsts)}
    kernel.reembed(_ErasingWhileEmbedding(get_embedder("static"), kernel, victims), batch=50)
    with kernel.engine.connect() as conn:
        for victim in victims.values():
            row = conn.exec_driver_sql("SELECT content, embedding IS NULL, erased_at IS NOT NULL FROM memories"
                                       " WHERE id = %s", (victim,)).one()
            assert tuple(row) == ("", True, True), victim
            assert conn.exec_driver_sql("SELECT count(*) FROM passages WHERE memory_id = %s", (victim,)).scalar() == 0
        assert conn.exec_driver_sql("SELECT count(*) FROM passages p JOIN memories m ON m.id = p.memory_id"
                                    " WHERE m.erased_at IS NOT NULL").scalar() == 0
        assert conn.exec_driver_sql("SELECT count(*) FROM memories WHERE erased_at IS NULL AND content <> ''"
                                    " AND embedding IS NULL").scalar() == 0
        assert "secret" not in " ".join(r[0] for r in conn.exec_driver_sql("SELECT content FROM memories"))
    assert _cli(env, "audit", "verify").returncode == 0


def test_every_memory_written_during_a_live_reembed_is_found_by_its_word(store) -> None:  # noqa: ANN001
    """Round 2 of the attack: while a reembed runs, a server takes writes by every path (REST remember,
    a batch, a keyed ingest, MCP); afterwards each is found by the one word only it holds."""
    env, kernel = store
    token = for_operator(kernel, "acme/ops").create_token(None, "race-writer", "read,write", None).token
    server = start_server(env, "--rate-limit", "0", "--in-flight", "0", "--org-in-flight", "0")
    written: list[tuple[str, str]] = []
    stop = threading.Event()
    mcp = {"Accept": "application/json, text/event-stream"}

    def write(lane: int) -> None:
        i = 0
        with httpx2.Client(base_url=server.url, headers={**bearer(token), **mcp}, timeout=120) as http:
            while not stop.is_set():
                word = f"zephyr{lane}q{i}"
                kind = (i + lane) % 4
                if kind == 0:
                    r = http.post("/v1/memories", json={"content": f"The codeword is {word}."})
                    ids = [r.json()["id"]] if r.status_code == 201 else []
                elif kind == 1:
                    r = http.post("/v1/memories:batch", json={"memories": [{"content": f"Batch codeword {word}."}]})
                    ids = r.json()["ids"] if r.status_code == 201 else []
                elif kind == 2:
                    r = http.post("/v1/memories:ingest", content=json.dumps(
                        {"content": f"Ingested codeword {word}.", "key": word}).encode())
                    ids = r.json()["ids"] if r.status_code == 201 else []
                else:
                    r = http.post("/mcp", json={"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                        "name": "remember", "arguments": {"content": f"MCP codeword {word}."}}})
                    result = r.json().get("result", {}) if r.status_code == 200 else {}
                    ids = [result["structuredContent"]["id"]] if result and not result.get("isError") else []
                assert ids, (kind, r.status_code, r.text[:300])
                written.append((word, ids[0]))
                i += 1

    try:
        writers = [threading.Thread(target=write, args=(lane,)) for lane in range(2)]
        for t in writers:
            t.start()
        migrated = _cli(env, "reembed", "--embedder", "static", "--batch", "50", "--json")
        time.sleep(0.3)  # writes after the swap too
        stop.set()
        for t in writers:
            t.join(timeout=120)
        assert migrated.returncode == 0, migrated.stderr
        assert len(written) > 20
        with httpx2.Client(base_url=server.url, headers=bearer(token), timeout=60) as http:
            missing = [(word, memory_id) for word, memory_id in written
                       if memory_id not in [h["id"] for h in http.post("/v1/search", json={"query": word, "k": 3})
                                            .json()["hits"]]]
    finally:
        server.stop()
    assert missing == []
    with kernel.engine.connect() as conn:  # each in the new space
        assert not conn.exec_driver_sql("SELECT count(*) FROM memories WHERE erased_at IS NULL AND embedding IS NULL"
                                        ).scalar()
