import sqlalchemy as sa

from tests.conftest import count


def _seed(kernel):
    for i in range(5):
        kernel.remember("acme", f"audit fact {i}")
    kernel.search("acme", "audit fact")


def test_every_write_and_search_is_audited_and_chain_verifies(kernel):
    _seed(kernel)
    rows = kernel.audit_tail(50)
    assert [r.action for r in rows] == ["remember"] * 5 + ["search"]
    assert rows[-1].detail.startswith("search ok returned=5 tokens=") and rows[-1].detail.endswith("driver=baseline")
    assert [r.seq for r in rows] == list(range(1, 7))
    assert all(rows[i].prev_hash == rows[i - 1].hash for i in range(1, 6))
    assert kernel.audit_verify().ok


def test_raw_sql_update_is_detected_at_that_row(kernel):
    _seed(kernel)
    with kernel.engine.begin() as conn:
        conn.execute(sa.text("UPDATE audit_log SET detail = 'nothing to see' WHERE seq = 3"))
    result = kernel.audit_verify()
    assert not result.ok and result.first_bad_seq == 3 and "altered" in result.reason


def test_raw_sql_delete_is_detected(kernel):
    _seed(kernel)
    with kernel.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM audit_log WHERE seq = 2"))
    result = kernel.audit_verify()
    assert not result.ok and result.first_bad_seq == 2 and "missing" in result.reason


def test_rehashed_forgery_still_breaks_the_next_link(kernel):
    _seed(kernel)
    from halomem.audit.log import row_hash

    with kernel.engine.begin() as conn:
        r = conn.execute(sa.text("SELECT * FROM audit_log WHERE seq = 2")).one()
        forged = row_hash(r.prev_hash, r.seq, r.at, r.actor_ns, r.action, "forged", r.request_id)
        conn.execute(sa.text("UPDATE audit_log SET detail='forged', hash=:h WHERE seq=2"), {"h": forged})
    result = kernel.audit_verify()
    assert not result.ok and result.first_bad_seq == 3


def test_cli_audit_verify_exit_code_names_row(kernel, cli):
    _seed(kernel)
    assert cli("audit", "verify").returncode == 0
    with kernel.engine.begin() as conn:
        conn.execute(sa.text("UPDATE audit_log SET actor_ns = 'acme/sales' WHERE seq = 4"))
    proc = cli("audit", "verify")
    assert proc.returncode == 9
    assert proc.stderr.strip() == "halomem: integrity error: audit chain broken at row 4: row 4 was altered (hash mismatch)"
    assert count(kernel, "SELECT count(*) FROM audit_log") == 6
