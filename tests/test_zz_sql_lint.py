"""The ACL lint (tests/sql_lint.py) catches what it should; conftest's session fixture runs it over
every statement each test process made halomem send."""
from tests.conftest import SQL_LINT
from tests.sql_lint import Captured, check


def test_lint_catches_what_it_should():
    bad = [
        Captured("SELECT id FROM memories WHERE t_valid_to IS NULL AND erased_at IS NULL", "halomem.index.reader",
                 frozenset()),
        Captured("SELECT id FROM memories WHERE namespace IN (%(a)s)", "halomem.index.reader", frozenset()),
        Captured("SELECT e.id FROM entities e JOIN mentions m ON m.entity_id = e.id", "halomem.write.writer",
                 frozenset()),
        Captured("UPDATE memories SET content = %s", "halomem.index.reader", frozenset()),
        Captured("INSERT INTO audit_log (seq) VALUES (1)", "halomem.drivers.view", frozenset()),
    ]
    assert all(check(s) for s in bad)
    good = Captured("SELECT id FROM memories WHERE namespace IN (%(n_1)s) AND t_valid_to IS NULL AND erased_at IS NULL",
                    "halomem.index.reader", frozenset())
    assert check(good) == []


def test_the_main_read_paths_pass_the_acl_lint(kernel):
    # the main read paths run at least once in this process, even when this file runs alone
    kernel.remember("acme", "lint fact about Ann")
    kernel.add_entity("acme", "Ann")
    kernel.put_concept("acme", "lint/concept", "lint concept")
    for driver in ("baseline", "graph", "keyword"):
        kernel.search("acme/eng", "lint fact Ann", driver=driver)
    with SQL_LINT.lock:
        statements = list(SQL_LINT.statements)
    distinct = {(s.sql, s.module) for s in statements}
    problems = sorted({p for s in set(statements) for p in check(s)})
    print(f"\nSQL lint: {len(statements)} statements captured, {len(distinct)} distinct, {len(problems)} problems")
    assert len(distinct) >= 20
    assert problems == []
