"""Erasure that holds: every content-bearing field wiped, audit rows with ids only, and after
`erase --purge` no copy of the erased text in the data dir's table, TOAST or index files."""
import json
import os
from pathlib import Path

import pytest
import sqlalchemy as sa

PERSONAL = "jane.doe.unique-marker@acme.example"


def test_erase_wipes_every_content_bearing_field(kernel):
    kernel.add_entity("acme", "Jane Doe")
    made = kernel.remember("acme", f"Jane Doe asked us to write to {PERSONAL}", source=f"email:{PERSONAL}",
                           provenance={"from": PERSONAL})
    kernel.erase("acme", made.id, reason="GDPR request")
    with kernel.engine.connect() as conn:
        row = conn.execute(sa.text("SELECT content, embedding, source, provenance, content_tsv::text AS tsv,"
                                   " erased_at FROM memories WHERE id = :id"), {"id": made.id}).one()
        assert (row.content, row.embedding, row.source, row.provenance, row.tsv) == ("", None, None, {}, "")
        assert row.erased_at is not None
        assert conn.execute(sa.text("SELECT count(*) FROM mentions WHERE memory_id = :id"),
                            {"id": made.id}).scalar() == 0
        audit = " ".join(conn.execute(sa.text("SELECT fields::text FROM audit_log")).scalars())
    assert "jane" not in audit.lower() and made.id in audit


def test_every_table_is_held_to_the_personal_text_list_or_says_why_not():
    from halomem.db.schema import NO_PERSONAL_TEXT, PERSONAL_TEXT_TABLES, metadata

    assert set(metadata.tables) == set(PERSONAL_TEXT_TABLES) | set(NO_PERSONAL_TEXT)
    assert not set(PERSONAL_TEXT_TABLES) & set(NO_PERSONAL_TEXT)


@pytest.mark.skipif(bool(os.environ.get("HALOMEM_DATABASE_URL")), reason="reads the embedded server's files")
def test_purge_leaves_no_copy_in_table_files(kernel, settings, cli):
    from halomem.db.schema import PERSONAL_TEXT_TABLES
    from halomem.ops import for_operator

    made = kernel.remember("acme", f"write to {PERSONAL} " + "padding " * 400, source=f"email:{PERSONAL}")
    kernel.remember("acme", "an unrelated fact that stays")
    operator = for_operator(kernel, "acme")
    found = operator.search(f"write to {PERSONAL}", k=5)  # a query quoting it, kept beside the trail
    assert found.hits[0].id == made.id
    operator.feedback(found.request_id, made.id, "helpful", f"yes, {PERSONAL} is right")  # a note quoting it
    with kernel.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("ANALYZE")  # the planner's samples (pg_statistic) hold short values too
        conn.exec_driver_sql("CHECKPOINT")
        files = {table: conn.exec_driver_sql(f"SELECT pg_relation_filepath('{table}')").scalar()
                 for table in ("search_queries", "feedback")}
    pgdata = Path(settings.home) / "pgdata"
    needle = PERSONAL.encode()

    def holders() -> list[str]:
        found = []
        for path in (pgdata / "base").rglob("*"):
            if path.is_file() and needle in path.read_bytes():
                found.append(str(path.relative_to(pgdata)))
        return found

    before = holders()
    assert before, "the text should be on disk before the erase"
    assert {files["search_queries"], files["feedback"]} <= set(before)  # the query and the note, on disk
    erased = cli("erase", "--ns", "acme", made.id, "--reason", "GDPR", "--purge", "--json")
    assert erased.returncode == 0, erased.stderr
    assert json.loads(erased.stdout)["erased"] == made.id
    assert holders() == []  # WAL (pg_wal) may still hold it until recycled; backups are the operator's
    assert kernel.search("acme", "unrelated fact").hits
    assert kernel.audit_verify().ok
    purged = kernel.audit_tail(5, "purge")[-1].fields
    assert set(PERSONAL_TEXT_TABLES) <= set(purged["tables"])
