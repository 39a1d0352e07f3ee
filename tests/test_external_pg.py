"""halomem on a separately started PostgreSQL under a least-privilege owner role (not a superuser,
no CREATEROLE; the DBA created the vector extension), as managed services run it: a cluster from
the embedded wheel's own PostgreSQL 16 binaries on another port (halomem.db.external)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from halomem.db.external import ExternalPostgres


@pytest.fixture(scope="module")
def external():
    server = ExternalPostgres(Path(tempfile.mkdtemp(prefix="halomem-ext-", dir="/tmp"))).start()
    home = Path(tempfile.mkdtemp(prefix="halomem-ext-home-", dir="/tmp"))
    base = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
    env = {**base, "HALOMEM_DATABASE_URL": server.owner_url, "HALOMEM_HOME": str(home),
           "HALOMEM_EMBEDDER": "hash"}
    yield server, env
    server.destroy()


def halomem(env: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_owner_role_is_least_privilege(external):
    server, _ = external
    with sa.create_engine(server.owner_url).connect() as conn:
        row = conn.execute(sa.text("SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user")).one()
    assert tuple(row) == (False, False)


def test_erase_purge_does_what_the_role_may_and_says_what_it_could_not(external):
    server, env = external
    assert halomem(env, "init").returncode == 0
    made = halomem(env, "remember", "--ns", "acme", "The vault code is PurgeCanary9031")
    assert made.returncode == 0, made.stderr
    memory_id = made.stdout.strip()
    purged = halomem(env, "erase", memory_id, "--ns", "acme", "--purge")
    assert purged.returncode == 0, purged.stderr
    warnings = purged.stderr.strip().splitlines()
    assert len(warnings) == 1 and "no CHECKPOINT (needs the pg_checkpoint role)" in warnings[0]
    again = halomem(env, "erase", memory_id, "--ns", "acme", "--purge")  # idempotent
    assert again.returncode == 0 and "already erased" in again.stderr
    with sa.create_engine(server.owner_url).connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM memories WHERE content LIKE '%PurgeCanary%'")).scalar() == 0
        purge_rows = conn.execute(sa.text("SELECT fields FROM audit_log WHERE action = 'purge'")).scalars().all()
    assert len(purge_rows) == 2 and all(f["skipped"] == 1 for f in purge_rows)
