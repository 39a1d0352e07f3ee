"""A driver that got hold of a database connection anyway still cannot write."""
import pytest
import sqlalchemy as sa

from halomem.drivers.view import build_scoped_view
from halomem.index import Scope
from halomem.types import Namespace
from tests.conftest import count

ATTEMPTS = [
    "INSERT INTO memories (id, namespace, content) VALUES ('m_evil', 'acme', 'planted by a driver')",
    "UPDATE memories SET content = 'defaced'",
    "DELETE FROM audit_log",
    "SELECT * FROM audit_log",
    "SELECT * FROM policies",
]


def _smuggled_connection(kernel):
    """What a hostile driver would reach if it got past the static scan: the view's connection."""
    return kernel.index.reader()


@pytest.mark.parametrize("sql", ATTEMPTS)
def test_view_connection_is_read_only_and_select_only(kernel, sql):
    kernel.remember("acme", "original content")
    with pytest.raises(sa.exc.DBAPIError):
        with _smuggled_connection(kernel) as reader:
            view = build_scoped_view(reader, Scope(Namespace("acme")), kernel.embedder)
            assert view.candidates(10)
            reader.conn.exec_driver_sql(sql)
    assert count(kernel, "SELECT count(*) FROM memories WHERE content = 'original content'") == 1
    assert count(kernel, "SELECT count(*) FROM audit_log") == 1


def test_escaping_the_transaction_does_not_help(kernel):
    if kernel.reader_engine is None:
        pytest.skip("the server did not allow a select-only role (external server without CREATEROLE)")
    kernel.remember("acme", "original content")
    with kernel.reader_engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT current_user").scalar() == "halomem_reader"
        conn.exec_driver_sql("RESET ROLE")
        with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
            conn.exec_driver_sql("UPDATE memories SET content = 'defaced'")
        conn.rollback()
        with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
            conn.exec_driver_sql(f"SET ROLE {kernel.engine.url.username}")  # the owner (embedded: the superuser)
    assert count(kernel, "SELECT count(*) FROM memories WHERE content = 'defaced'") == 0
