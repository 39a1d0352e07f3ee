"""Crash safety (SIGKILL of a writer and of the server itself) and concurrent load."""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from halomem.config import Settings
from halomem.db import embedded
from halomem.kernel import Kernel

FULL = os.environ.get("HALOMEM_TEST_PROFILE") == "full"
EMBEDDED_ONLY = pytest.mark.skipif(bool(os.environ.get("HALOMEM_DATABASE_URL")), reason="embedded server only")


def _chain_heads(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM memories WHERE namespace='crash' AND t_valid_to IS NULL"
                                    " AND erased_at IS NULL")).scalar_one()


@EMBEDDED_ONLY
def test_sigkill_writer_and_server_during_supersede_then_recover(tmp_path):
    home = tmp_path / "crash-home"
    setup = subprocess.run([sys.executable, "-c", (
        "import sys; from pathlib import Path; from halomem.config import Settings; from halomem.kernel import Kernel;"
        "k = Kernel.boot(Settings(home=Path(sys.argv[1]))); print(k.remember('crash', 'chain version 0').id)"),
        str(home)], capture_output=True, text=True, timeout=120)
    head = setup.stdout.strip()
    writer = subprocess.Popen([sys.executable, str(Path(__file__).with_name("crash_writer.py")), str(home), head],
                              stdout=subprocess.PIPE, text=True)
    reported = []
    deadline = time.monotonic() + 60
    while len(reported) < 40 and time.monotonic() < deadline:
        reported.append(writer.stdout.readline().strip())
    postmaster = int((home / "pgdata" / "postmaster.pid").read_text().split()[0])
    os.kill(writer.pid, signal.SIGKILL)
    os.kill(postmaster, signal.SIGKILL)  # the database server crashes too
    writer.wait()
    reported += [line.strip() for line in writer.stdout.read().splitlines() if line.strip()]
    assert len(reported) >= 40
    time.sleep(1.0)

    kernel = Kernel.boot(Settings(home=home))  # restart: WAL recovery
    try:
        with kernel.engine.connect() as conn:
            present = {r[0] for r in conn.execute(sa.text("SELECT id FROM memories WHERE namespace='crash'"))}
        assert set(reported) <= present, "a write reported as committed was lost"
        assert _chain_heads(kernel.engine) == 1
        assert kernel.audit_verify().ok
        newest = kernel.history("crash", reported[-1])[-1]
        assert newest.t_valid_to is None
        assert kernel.supersede("crash", newest.id, "after recovery").id
    finally:
        kernel.close()
    assert embedded.stop(home) is True
    assert embedded.status(home).running is False


def test_concurrent_searchers_and_writers(kernel):
    seconds = 60 if FULL else 6
    kernel.ingest_texts("load", [f"load corpus row {i} about topic {i % 17}" for i in range(2000)])
    kernel.set_policy("load/a", {"ab_test": {"a": "baseline", "b": "graph", "pct_b": 50}})
    heads = [kernel.remember("load/a", f"writer {w} head").id for w in range(2)]
    stop = time.monotonic() + seconds
    errors: list[BaseException] = []
    searches = [0] * 8
    writes = [0] * 2

    def searcher(i: int) -> None:
        try:
            n = 0
            while time.monotonic() < stop:
                kernel.search("load/a" if i % 2 else "load", f"topic {n % 17} row", k=5)
                n += 1
            searches[i] = n
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    def writer(w: int) -> None:
        try:
            head, n = heads[w], 0
            while time.monotonic() < stop:
                kernel.remember("load/a", f"writer {w} row {n}")
                head = kernel.supersede("load/a", head, f"writer {w} head v{n}").id
                n += 1
            writes[w] = n
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(i,)) for i in range(8)]
    threads += [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    assert not any(t.is_alive() for t in threads), "deadlock: a worker never finished"
    assert errors == []
    with kernel.engine.connect() as conn:
        audited = conn.execute(sa.text("SELECT count(*) FROM audit_log WHERE action='search'")).scalar_one()
    print(f"\nload: {sum(searches)} searches, {2 * sum(writes)} writes in {seconds}s, {audited} search audit rows")
    assert audited == sum(searches) > 0 and all(writes)
    assert kernel.audit_verify().ok
    # every writer's chain is whole: one live head, every version linked to the one before it
    with kernel.engine.connect() as conn:
        for w in range(2):
            rows = conn.execute(sa.text(
                "SELECT id, supersedes, superseded_by, t_valid_to FROM memories WHERE namespace = 'load/a'"
                " AND content LIKE :p"), {"p": f"writer {w} head%"}).all()
            assert len(rows) == writes[w] + 1
            assert sum(1 for r in rows if r.t_valid_to is None) == 1
            by_id = {r.id: r for r in rows}
            assert all(by_id[r.supersedes].superseded_by == r.id for r in rows if r.supersedes)
