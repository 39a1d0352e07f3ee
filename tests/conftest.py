"""Test fixtures: one real embedded PostgreSQL per session (or HALOMEM_DATABASE_URL's server).

Each test starts from empty tables. Point HALOMEM_DATABASE_URL only at a scratch database: the
suite truncates every halomem table.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from halomem.config import Settings
from halomem.kernel import Kernel

from tests.sql_lint import Lint, check

pytest_plugins = ["halomem.conformance.pytest_plugin"]

SQL_LINT = Lint()


@sa.event.listens_for(sa.Engine, "before_cursor_execute")
def _capture_sql(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
    SQL_LINT.record(statement)

# `make test-quick`: the core of each room (ACL, write path, retrieval, audit, auth, erasure, intake, the
# transports' basics) in under two minutes on one process; `make test` runs everything
QUICK = {"test_acl.py", "test_acl_properties.py", "test_write_path.py", "test_retrieval.py", "test_policy.py",
         "test_audit.py", "test_auth.py", "test_erasure.py", "test_drivers.py", "test_namespace.py", "test_intake.py",
         "test_server_http.py", "test_server_mcp.py", "test_safe_output.py", "test_odd_input.py", "test_feedback.py",
         "test_who_saw.py", "test_evidence.py", "test_lexicon.py", "test_repo_hygiene.py", "test_only_path.py",
         "test_defense_in_depth.py", "test_source_context.py", "test_subjects.py", "test_lexical_pool.py",
         "test_vector_scan.py", "test_zz_sql_lint.py"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in QUICK:
            item.add_marker(pytest.mark.quick)


BUILTIN_DRIVERS = {"baseline", "fusion", "graph", "keyword"}
TABLES = "memories, lexicon, lexicon_events, concepts, entities, entity_aliases, mentions, audit_log, policies, principals, search_seen, search_queries, feedback"


@pytest.fixture(scope="session")
def home() -> Path:
    # outside $HOME: as root the embedded server loosens permissions on the data dir's parents
    return Path(tempfile.mkdtemp(prefix="halomem-test-", dir="/tmp"))


def _database_url() -> str | None:
    """HALOMEM_DATABASE_URL, or under pytest-xdist the worker's own database beside it (each worker
    truncates its tables; ``python -m halomem.db.external start DIR 2`` makes halomem_gw0/1)."""
    url = os.environ.get("HALOMEM_DATABASE_URL") or None
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if url and worker:
        parsed = sa.engine.make_url(url)
        url = parsed.set(database=f"{parsed.database}_{worker}").render_as_string(hide_password=False)
    return url


@pytest.fixture(scope="session")
def settings(home: Path) -> Settings:
    return Settings(home=home, database_url=_database_url(), embedder="hash")


@pytest.fixture(scope="session", autouse=True)
def sql_lint_at_the_end():
    """After every test of this process (each xdist worker has its own): every statement halomem
    sent passes the ACL lint (tests/sql_lint.py). A problem fails the session as a teardown error."""
    yield
    with SQL_LINT.lock:
        statements = list(SQL_LINT.statements)
    problems = sorted({p for s in set(statements) for p in check(s)})
    assert problems == [], "\n".join(problems[:20])


@pytest.fixture(scope="session")
def booted(settings: Settings) -> Kernel:
    k = Kernel.boot(settings)
    yield k
    k.close()
    if not settings.database_url:  # the throwaway test server never outlives the session
        from halomem.db import embedded

        embedded.stop(settings.home)


@pytest.fixture()
def kernel(booted: Kernel) -> Kernel:
    with booted.engine.begin() as conn:
        conn.exec_driver_sql(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
    from halomem.audit.heads import FILES

    for name in FILES:  # a deliberate reset of the chain
        (booted.settings.home / name).unlink(missing_ok=True)
    booted.index.catalog.forget()  # row counts remembered from the tables just emptied
    for ns in booted.namespace_indexes():
        booted.drop_namespace_index(ns)
    for name in set(booted.registry.names()) - BUILTIN_DRIVERS:
        closer = getattr(booted.registry.get(name), "close", None)
        if callable(closer):
            closer()  # an isolated driver's workers
        booted.registry.unmount(name)
    return booted


@pytest.fixture()
def cli_env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
    env["HALOMEM_HOME"] = str(settings.home)
    if settings.database_url:
        env["HALOMEM_DATABASE_URL"] = settings.database_url
    return env


@pytest.fixture()
def cli(kernel: Kernel, cli_env: dict[str, str]):
    """Run `halomem ...` as a fresh process against the test database."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], input=input, text=True,
                              capture_output=True, env={**cli_env, **(env or {})}, timeout=timeout)

    return run


def count(kernel: Kernel, sql: str) -> int:
    with kernel.engine.connect() as conn:
        return int(conn.execute(sa.text(sql)).scalar_one())


def make_token(kernel: Kernel, ns: str, scopes: str = "read,write", expires_in=None) -> str:  # noqa: ANN001
    """A real token issued by the operator (what `halomem token create` does)."""
    from halomem.ops import for_operator

    return for_operator(kernel, ns).create_token(None, f"test-{scopes}", scopes, expires_in).token


@pytest.fixture(scope="session")
def api_server(settings: Settings, booted: Kernel):
    """One real `halomem serve` on 127.0.0.1 for the session (no rate limit; tests that need one
    start their own). Tables are truncated per test by the ``kernel`` fixture."""
    from tests.serving import start_server

    env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
    env["HALOMEM_HOME"] = str(settings.home)
    if settings.database_url:
        env["HALOMEM_DATABASE_URL"] = settings.database_url
    server = start_server(env, "--rate-limit", "0")
    yield server
    server.stop()
