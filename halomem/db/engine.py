"""Engine construction: the external server from HALOMEM_DATABASE_URL, else the embedded one."""
from __future__ import annotations

from typing import Any, Callable

import sqlalchemy as sa

from ..config import Settings
from ..errors import ConfigError, DatabaseUnavailableError
from . import embedded

# Never let psycopg turn a repeated statement into a server-side prepared one: after five runs
# PostgreSQL may switch it to a generic plan that cannot see the tsquery or the namespace, and the
# lexical pool then sorts whole namespaces (22 ms became 50 ms on a 100k store). Planning is ~0.4 ms.
CONNECT_ARGS = {"prepare_threshold": None}


def _one_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def sqlalchemy_url(url: str) -> str:
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def database_url(settings: Settings) -> str:
    if settings.database_url:
        return sqlalchemy_url(settings.database_url)
    return embedded.attach(settings.home)


def make_engine(settings: Settings, pool_size: int = 10) -> sa.Engine:
    url = database_url(settings)
    try:
        engine = sa.create_engine(url, pool_size=pool_size, max_overflow=10, pool_pre_ping=True,
                                 connect_args=CONNECT_ARGS)
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.ArgumentError as exc:
        raise ConfigError(f"HALOMEM_DATABASE_URL is not a usable PostgreSQL URL: {_one_line(exc)}") from None
    except sa.exc.OperationalError as exc:
        raise DatabaseUnavailableError(f"cannot connect to PostgreSQL: {_one_line(exc.orig or exc)}") from None
    return engine


def make_replicas(urls: str | None, index_over: Callable[[sa.Engine], Any]) -> list[Any]:
    """The hot standbys of HALOMEM_READ_DATABASE_URL (comma-separated), each read through its
    SELECT-only reader role when that logs in (a physical standby has the primary's roles). A standby
    that does not answer now is kept: the router skips it until it does. ``index_over``: what reads
    through an engine (the kernel passes halomem.index.MemoryIndex)."""
    from .migrations import READER_ROLE
    from .replicas import Replica

    replicas = []
    for url in [u.strip() for u in (urls or "").split(",") if u.strip()]:
        try:
            engine = sa.create_engine(sqlalchemy_url(url), pool_size=10, max_overflow=10, pool_pre_ping=True,
                                      connect_args={**CONNECT_ARGS, "connect_timeout": 2})
        except sa.exc.ArgumentError as exc:
            raise ConfigError(f"HALOMEM_READ_DATABASE_URL is not a usable PostgreSQL URL: {_one_line(exc)}") from None
        reader = make_reader_engine(engine, READER_ROLE, writable=False)
        name = f"{engine.url.host or 'local'}:{engine.url.port or 5432}"
        replicas.append(Replica(name, engine, index_over(reader or engine)))
    return replicas


def make_reader_engine(engine: sa.Engine, role: str, pool_size: int = 10, *, writable: bool = True) -> sa.Engine | None:
    """The same server as ``role`` (SELECT-only), or None where that login is not possible.

    When the admin URL carries a password, the reader's is derived from it (db.credentials) and
    set on the role if it does not log in yet.
    """
    from .credentials import derive_reader_password
    from .migrations import grant_reader, set_role_password

    password = derive_reader_password(engine.url.password) if engine.url.password else None
    reader = sa.create_engine(engine.url.set(username=role, password=password), pool_size=pool_size,
                              max_overflow=10, pool_pre_ping=True, connect_args=CONNECT_ARGS)

    def usable() -> bool:
        try:
            with reader.connect() as conn:
                return bool(conn.exec_driver_sql(
                    "SELECT has_table_privilege(current_user, 'memories', 'SELECT')").scalar())
        except sa.exc.SQLAlchemyError:
            return False

    ok = usable()
    if not ok and password and writable:  # a standby takes no grants: they come from its primary
        try:
            with engine.begin() as conn:  # a DBA made the role after init, or it lacks a password yet
                granted = grant_reader(conn)
            ok = granted and usable()
            if granted and not ok:
                with engine.begin() as conn:
                    changed = set_role_password(conn, role, password)
                ok = changed and usable()  # after the commit: the new password is visible
        except sa.exc.SQLAlchemyError:
            ok = False
    if not ok:
        reader.dispose()
        return None
    return reader
