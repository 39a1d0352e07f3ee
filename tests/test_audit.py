import json

import sqlalchemy as sa


def _seed(kernel):
    for i in range(5):
        kernel.remember("acme", f"audit fact {i}")
    kernel.search("acme", "audit fact")


def test_every_write_and_search_is_audited_and_chain_verifies(kernel):
    _seed(kernel)
    rows = kernel.audit_tail(50)
    assert [r.action for r in rows] == ["remember"] * 5 + ["search"]
    assert rows[-1].outcome == "ok" and rows[-1].fields["returned"] == 5
    assert rows[-1].fields["driver"] == "fusion"  # the default policy
    assert rows[-1].detail.startswith("search ok returned=5 tokens=")  # the same record, one line for people
    assert [r.seq for r in rows] == list(range(1, 7))
    assert all(rows[i].prev_hash == rows[i - 1].hash for i in range(1, 6))
    assert kernel.audit_verify().ok


def test_raw_sql_update_is_detected_at_that_row(kernel):
    _seed(kernel)
    with kernel.engine.begin() as conn:
        conn.execute(sa.text("UPDATE audit_log SET fields = '{\"outcome\": \"ok\"}' WHERE seq = 3"))
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
        forged = row_hash(r.prev_hash, r.seq, r.at, r.actor_ns, r.action, {"outcome": "forged"}, r.request_id)
        conn.execute(sa.text("UPDATE audit_log SET fields='{\"outcome\": \"forged\"}', hash=:h WHERE seq=2"),
                     {"h": forged})
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
    after = [r for r in kernel.audit_tail(20) if r.seq > 6]
    records = [r.fields for r in after if "verified" in r.fields]  # each verify is a request with its own row
    assert len(records) == 2, [(r.action, r.fields) for r in after]
    assert records[0] == {"outcome": "ok", "verified": True, "rows": 6}
    assert records[1]["verified"] is False


# --- truncation and rewriting, caught by heads kept outside the database ---------------------------
def _recorded(kernel):  # noqa: ANN001, ANN202
    _seed(kernel)
    result = kernel.audit_verify()  # records the head in $HALOMEM_HOME/audit-heads.log
    assert result.ok and result.head_seq == 6 and len(result.head_hash) == 64
    return result


def test_deleting_the_newest_rows_is_caught(kernel):
    _recorded(kernel)
    with kernel.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM audit_log WHERE seq >= 5"))
    result = kernel.audit_verify()
    assert not result.ok and result.first_bad_seq == 6 and "gone" in result.reason


def test_rewriting_the_newest_row_is_caught(kernel):
    from halomem.audit.log import row_hash

    _recorded(kernel)
    with kernel.engine.begin() as conn:  # a consistent forgery of the last row: the chain itself verifies
        r = conn.execute(sa.text("SELECT * FROM audit_log WHERE seq = 6")).one()
        forged = row_hash(r.prev_hash, r.seq, r.at, r.actor_ns, r.action, {"outcome": "ok", "returned": 0},
                          r.request_id, r.principal)
        conn.execute(sa.text("UPDATE audit_log SET fields = '{\"outcome\": \"ok\", \"returned\": 0}', hash = :h"
                             " WHERE seq = 6"), {"h": forged})
    result = kernel.audit_verify()
    assert not result.ok and result.first_bad_seq == 6 and "rewritten" in result.reason


def test_rewriting_the_whole_chain_is_caught(kernel):
    from halomem.audit.log import GENESIS, row_hash

    _recorded(kernel)
    with kernel.engine.begin() as conn:
        prev = GENESIS
        for r in conn.execute(sa.text("SELECT * FROM audit_log ORDER BY seq")).all():
            record = {**r.fields, "edited": True}
            digest = row_hash(prev, r.seq, r.at, r.actor_ns, r.action, record, r.request_id, r.principal)
            conn.execute(sa.text("UPDATE audit_log SET fields = CAST(:f AS jsonb), prev_hash = :p, hash = :h"
                                 " WHERE seq = :s"), {"f": json.dumps(record), "p": prev, "h": digest, "s": r.seq})
            prev = digest
    result = kernel.audit_verify()
    assert not result.ok and "rewritten" in result.reason


def test_expect_head_and_json_fields(kernel, cli):
    import json

    _seed(kernel)
    verified = cli("audit", "verify", "--json")
    assert verified.returncode == 0
    data = json.loads(verified.stdout)
    head = f"{data['head_seq']}:{data['head_hash']}"
    assert cli("audit", "verify", "--expect-head", head).returncode == 0
    from halomem.audit.heads import FILES

    for name in FILES:  # an attacker who also reached the home dir...
        (kernel.settings.home / name).unlink(missing_ok=True)
    with kernel.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM audit_log WHERE seq >= :s"), {"s": data["head_seq"]})
    refused = cli("audit", "verify", "--expect-head", head)  # ...is still caught by a head kept elsewhere
    assert refused.returncode == 9 and "gone" in refused.stderr
    assert cli("audit", "verify", "--expect-head", "12:nothex").returncode == 3


def test_the_hash_made_in_sql_is_row_hash(kernel):
    """audit.append makes each row's hash in its INSERT (after the lock, from the head it reads
    there): it must be exactly row_hash's, which verify recomputes, on any text a record holds."""
    from halomem import audit
    from halomem.audit.log import acting_as, row_hash

    odd = ["plain", "naïve — ünïcode «quotes»", "emoji 🧭 and 中文 and עברית", 'quote " backslash \\ slash /',
           "tab\tnewline\nbell\x07", "{\"looks\": [\"like\", \"json\"]}", "", "x" * 5000]
    with acting_as("p_sql_hash"):
        with kernel.engine.begin() as conn:
            seqs = [audit.append(conn, "acme", "remember", {"outcome": "ok", "text": text, "n": i, "f": 0.1 * i,
                                                            "nested": {"b": [text, None, True], "a": i}},
                                 f"req-{text[:8]}") for i, text in enumerate(odd)]
    with kernel.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT * FROM audit_log WHERE seq = ANY(:s) ORDER BY seq"), {"s": seqs}).all()
    assert [r.seq for r in rows] == seqs
    for r in rows:
        assert r.hash == row_hash(r.prev_hash, r.seq, r.at, r.actor_ns, r.action, r.fields, r.request_id, r.principal)
    assert rows[0].principal == "p_sql_hash" and rows[1].fields["text"] == odd[1]
    assert kernel.audit_verify().ok
