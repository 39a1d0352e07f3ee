"""Engine construction: the external server from HALOMEM_DATABASE_URL, else the embedded one."""
from __future__ import annotations

import sqlalchemy as sa

from ..config import Settings
from ..errors import DatabaseUnavailableError
from . import embedded

# Never let psycopg turn a repeated statement into a server-side prepared one: after five runs
# PostgreSQL may switch it to a generic plan that cannot see the tsquery or the namespace, and the
# lexical pool then sorts whole namespaces (22 ms became 50 ms on a 100k store). Planning is ~0.4 ms.
CONNECT_ARGS = {"prepare_threshold": None}


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
        raise DatabaseUnavailableError(f"bad database URL: {exc}") from None
    except sa.exc.OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise DatabaseUnavailableError(f"cannot connect to PostgreSQL: {reason}") from None
    return engine


def make_reader_engine(engine: sa.Engine, role: str, pool_size: int = 10) -> sa.Engine | None:
    """The same server as ``role`` (SELECT-only), or None where that login is not possible."""
    url = engine.url.set(username=role, password=None)
    reader = sa.create_engine(url, pool_size=pool_size, max_overflow=10, pool_pre_ping=True,
                              connect_args=CONNECT_ARGS)
    try:
        with reader.connect() as conn:
            usable = conn.exec_driver_sql("SELECT has_table_privilege(current_user, 'memories', 'SELECT')").scalar()
    except sa.exc.SQLAlchemyError:
        usable = False
    if not usable:
        reader.dispose()
        return None
    return reader
