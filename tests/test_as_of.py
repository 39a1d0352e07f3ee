"""Search as of a past instant, and `audit replay`: the ScopedView of an as-of search shows exactly
the rows valid then (checked against a brute-force oracle kept by the test itself, for every shipped
driver), erasure wins over history, and a replayed search is identical until the store changes in
a way replay can name."""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from halomem import __version__
from halomem.errors import REPLAY_DIFFERS_EXIT, InvalidInputError
from tests.conftest import BUILTIN_DRIVERS, make_token
from tests.mcp_client import McpSession
from tests.serving import bearer

WORD = "quokka"  # in every memory of a run: a lexical query that matches all of them


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _pause() -> datetime:
    """An instant strictly between the operation before and the one after (the database's clock is
    this machine's)."""
    time.sleep(0.003)
    when = _now()
    time.sleep(0.003)
    return when


OPS = st.lists(st.tuples(st.sampled_from(["remember", "supersede", "erase"]), st.integers(0, 50)),
               min_size=3, max_size=10)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, picks=st.lists(st.integers(0, 1000), min_size=3, max_size=3))
def test_as_of_search_returns_exactly_the_rows_valid_then(kernel, ops, picks):
    ns = f"acme/asof{time.monotonic_ns()}"
    live: set[str] = set()
    erased: set[str] = set()
    instants: list[tuple[datetime, frozenset[str]]] = [(_pause(), frozenset())]
    for n, (op, pick) in enumerate(ops):
        heads = sorted(live)
        if op == "supersede" and heads:
            old = heads[pick % len(heads)]
            new = kernel.supersede(ns, old, f"{WORD} version {n} of fact {pick}").id
            live = (live - {old}) | {new}
        elif op == "erase" and heads:
            gone = heads[pick % len(heads)]
            kernel.erase(ns, gone, reason="test")
            live, erased = live - {gone}, erased | {gone}
        else:
            live = live | {kernel.remember(ns, f"{WORD} fact {n} number {pick}").id}
        instants.append((_pause(), frozenset(live)))
    for pick in picks:
        when, valid = instants[pick % len(instants)]
        expected = valid - erased  # an erase wins at every instant, also before it happened
        for driver in sorted(BUILTIN_DRIVERS):
            found = kernel.search(ns, WORD, k=200, driver=driver, as_of=when)
            ids = {h.id for h in found.hits}
            assert ids <= expected, (driver, when, ids - expected)
            if driver in ("baseline", "keyword", "fusion"):  # lexical lanes find every row holding the word
                assert ids == expected, (driver, when, expected - ids)
            assert found.as_of == when.isoformat()
    present = {h.id for h in kernel.search(ns, WORD, k=200, driver="baseline").hits}
    assert present == live


STAT_WORDS = ["quokka", "wombat", "numbat", "dingo"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["remember", "parent", "supersede", "erase"]), st.integers(0, 50)),
                    min_size=3, max_size=12))
def test_as_of_statistics_are_todays_corrected_by_what_changed_and_equal_a_count_then(kernel, ops):
    """The lexicon corrected by the rows born or closed since an instant gives exactly the counts over
    the rows valid then (the slow way, kept for source-scoped reads), in a namespace and its parent."""
    import sqlalchemy as sa

    from halomem.index.acl import Scope
    from halomem.index.lexical import _counted_statistics, _lexemes, statistics
    from halomem.types import Namespace

    parent = f"acme/stats{time.monotonic_ns()}"
    ns = parent + "/team"
    live: list[tuple[str, str]] = []
    instants = [_pause()]
    for n, (op, pick) in enumerate(ops):
        words = " ".join(STAT_WORDS[: 1 + pick % len(STAT_WORDS)])
        if op in ("supersede", "erase") and live:
            where, old = live.pop(pick % len(live))
            if op == "supersede":
                live.append((where, kernel.supersede(where, old, f"{words} again {n}").id))
            else:
                kernel.erase(where, old, reason="test")
        else:
            where = parent if op == "parent" else ns
            live.append((where, kernel.remember(where, f"{words} note {n} {'x ' * (pick % 5)}").id))
        instants.append(_pause())
    text = " ".join(STAT_WORDS) + " note"
    with kernel.engine.connect() as conn:
        for when in instants:
            scope = Scope(Namespace(ns), None, when)
            fast = statistics(conn, scope, text)
            q = sa.select(sa.func.unnest(_lexemes(text)).label("lexeme")).subquery("q")
            slow = _counted_statistics(conn, scope, q)
            assert fast == slow, (when, fast, slow)


def test_concepts_keep_no_history_and_as_of_refuses_bad_instants(kernel):
    kernel.remember("acme/eng", "The release train leaves every Tuesday")
    kernel.put_concept("acme/eng", "eng/release", "Releases: a train every Tuesday, frozen in December")
    now = kernel.search("acme/eng", "release train Tuesday", k=10)
    assert "L3" in {h.tier for h in now.hits}
    then = kernel.search("acme/eng", "release train Tuesday", k=10, as_of=_now())
    assert then.hits and {h.tier for h in then.hits} == {"L2"}
    for bad in ("yesterday-ish", "2999-01-01", "1900-01-01", "9" * 65, "\x00", "99999999w"):
        with pytest.raises(InvalidInputError):
            kernel.search("acme/eng", "release", as_of=bad)


def test_as_of_over_rest_mcp_and_cli(api_server, kernel, cli):
    old = kernel.remember("acme/eng", "The VPN gateway is vpn1.example.org").id
    when = _pause()
    new = kernel.supersede("acme/eng", old, "The VPN gateway is vpn2.example.org").id
    token = make_token(kernel, "acme/eng", "read")
    rest = httpx2.post(api_server.url + "/v1/search", headers=bearer(token),
                       json={"query": "VPN gateway", "as_of": when.isoformat()}).json()
    assert [h["id"] for h in rest["hits"]] == [old] and rest["as_of"] == when.isoformat()
    assert httpx2.post(api_server.url + "/v1/search", headers=bearer(token),
                       json={"query": "VPN gateway", "as_of": "next week"}).status_code == 400
    session = McpSession(api_server.url, token)
    try:
        ok, found, text = session.call_with_text("search", {"query": "VPN gateway", "as_of": when.isoformat()})
        assert ok and [h["id"] for h in found["hits"]] == [old] and "concepts keep no history" in text
        ok, now = session.call("search", {"query": "VPN gateway"})
        assert ok and [h["id"] for h in now["hits"]] == [new] and now["as_of"] is None
    finally:
        session.close()
    shown = json.loads(cli("search", "--ns", "acme/eng", "VPN gateway", "--as-of", when.isoformat(), "--json").stdout)
    assert [h["id"] for h in shown["hits"]] == [old]
    day = cli("search", "--ns", "acme/eng", "VPN gateway", "--as-of", "1d", "--json")
    assert day.returncode == 0, day.stdout + day.stderr
    assert [h["id"] for h in json.loads(day.stdout)["hits"]] == []
    refused = cli("search", "--ns", "acme/eng", "VPN", "--as-of", "soon")
    assert refused.returncode == 3 and refused.stderr.count("\n") == 1 and "as_of" in refused.stderr


def _last_search_seq(kernel) -> int:  # noqa: ANN001
    with kernel.engine.connect() as conn:
        return conn.exec_driver_sql("SELECT max(seq) FROM audit_log WHERE action = 'search'").scalar()


def test_replaying_every_search_of_a_workload_is_identical(kernel):
    ids = [kernel.remember("acme/eng", f"Service {n} is owned by team {n % 3} and deploys on day {n % 5}").id
           for n in range(12)]
    seqs = []
    for n, query in enumerate(["who owns service 3", "deploys on day 2", "team 1", "service 7 owner"]):
        for driver in sorted(BUILTIN_DRIVERS):
            kernel.search("acme/eng", query, k=5, driver=driver)
            seqs.append(_last_search_seq(kernel))
        kernel.supersede("acme/eng", ids[n], f"Service {n} moved to team 9")  # the store moves on between
        kernel.remember("acme/eng", f"Service {n} has a new runbook for team {n % 3}")
    for seq in seqs:
        replay = kernel.replay(seq)
        assert replay.identical, (seq, replay.to_dict())
        assert replay.recorded and replay.reasons == []
    with kernel.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT fields FROM audit_log WHERE action = 'replay'").scalars().all()
    assert len(rows) == len(seqs) and all(r["outcome"] == "ok" and r["of"] in seqs for r in rows)
    assert kernel.audit_verify().ok


def test_replay_names_what_changed_and_says_when_it_cannot(kernel, cli):
    kept = kernel.remember("acme/eng", "Backups run nightly at 02:00 UTC").id
    doomed = kernel.remember("acme/eng", "Backups are copied to the Frankfurt bucket").id
    kernel.search("acme/eng", "backups", k=5, driver="keyword")
    seq = _last_search_seq(kernel)
    keyword = kernel.registry.get("keyword")
    kernel.registry.unmount("keyword")
    try:
        moved = kernel.replay(seq)
    finally:
        kernel.registry.mount(keyword)
    assert moved.replayed_driver == "baseline" and "driver keyword is not mounted now: replayed with baseline" in \
        moved.reasons
    with kernel.engine.connect() as conn:
        record = conn.exec_driver_sql("SELECT fields FROM audit_log WHERE seq = %s", (seq,)).scalar()
    assert record["driver_version"] == __version__  # a built-in is halomem's own version
    keyword.version = "9.9.9"  # what an upgraded cartridge reports (an isolated one: its distribution's)
    try:
        upgraded = kernel.replay(seq)
    finally:
        del keyword.version
    assert f"driver keyword changed: version {__version__} then, 9.9.9 now" in upgraded.reasons
    kernel.erase("acme/eng", doomed, reason="test")  # the erase forgets the query texts that found it
    gone = cli("audit", "replay", str(seq))
    assert gone.returncode == 4 and "no longer kept" in gone.stderr and "Backups" not in gone.stderr
    kernel.search("acme/eng", "nightly backups", k=5)
    later = _last_search_seq(kernel)
    kernel.supersede("acme/eng", kept, "Backups run nightly at 03:00 UTC")
    kernel.remember("acme/eng", "Nightly backups are verified by a restore test")
    shown = cli("audit", "replay", str(later))  # as of its instant: what it saw, not what came since
    assert shown.returncode == 0 and "identical: the same 1 refs" in shown.stdout
    assert kernel.search("acme/eng", "nightly backups", k=5).hits[0].id != kept
    assert cli("audit", "replay", "999999").returncode == 4
    assert cli("audit", "replay", "0").returncode == 2  # typer's own bound: a usage error


def test_replay_differs_with_exit_17_and_over_rest_only_within_the_admins_subtree(api_server, kernel, cli):
    kernel.remember("acme/eng", "The canteen opens at 08:00")
    kernel.search("acme/eng", "canteen opens", k=5, driver="baseline")
    seq = _last_search_seq(kernel)
    with kernel.engine.connect() as conn:
        detail = conn.exec_driver_sql("SELECT fields::text FROM audit_log WHERE seq = %s", (seq,)).scalar()
    assert kernel.replay(seq).identical
    kernel.remember("acme/sales", "The canteen in sales opens at 07:30")  # another namespace: no change
    assert kernel.replay(seq).identical and "canteen" not in detail
    url = f"{api_server.url}/v1/audit/replay/{seq}"
    eng_admin, sales_admin = make_token(kernel, "acme/eng", "admin"), make_token(kernel, "acme/sales", "admin")
    ok = httpx2.post(url, headers=bearer(eng_admin))
    assert ok.status_code == 200 and ok.json()["identical"] is True and ok.json()["namespace"] == "acme/eng"
    hidden = httpx2.post(url, headers=bearer(sales_admin))
    absent = httpx2.post(f"{api_server.url}/v1/audit/replay/999999", headers=bearer(sales_admin))
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["detail"].replace(str(seq), "N") == absent.json()["detail"].replace("999999", "N")
    assert httpx2.post(url, headers=bearer(make_token(kernel, "acme/eng", "read"))).status_code == 403
    # a concept returned then cannot come back as of then: replay differs, says why, exits 17
    kernel.put_concept("acme/eng", "eng/canteen", "Canteen: opens 08:00, closes 15:00")
    kernel.search("acme/eng", "canteen opens", k=5)
    concept_seq = _last_search_seq(kernel)
    found = kernel.replay(concept_seq)
    assert not found.identical and any("concepts keep no history" in r for r in found.reasons)
    assert found.missing == ["acme/eng:eng/canteen"]
    shown = cli("audit", "replay", str(concept_seq))
    assert shown.returncode == REPLAY_DIFFERS_EXIT and "missing   acme/eng:eng/canteen" in shown.stdout


EDGE_INSTANTS = ("0001-01-01T00:00:00+05:00", "0001-01-01T00:00:00-05:00", "9999-12-31T23:59:59-05:00",
                 "9999-12-31T23:59:59+14:00", "9999999w", "0001-01-01", "1969-12-31T23:59:59Z")


def test_instants_at_the_edge_of_the_range_are_refused_alike_on_every_transport(api_server, kernel, cli):
    """One parser (halomem.instants): 400 over REST, an error result over MCP, exit 3 and one line on
    the CLI; never an overflow's 500 or traceback."""
    kernel.remember("acme/eng", "The VPN gateway is vpn1.example.org")
    token = make_token(kernel, "acme/eng", "read")
    session = McpSession(api_server.url, token)
    try:
        for when in EDGE_INSTANTS:
            with pytest.raises(InvalidInputError):
                kernel.search("acme/eng", "VPN", as_of=when)
            rest = httpx2.post(api_server.url + "/v1/search", headers=bearer(token),
                               json={"query": "VPN gateway", "as_of": when})
            assert rest.status_code == 400 and rest.headers["content-type"].startswith("application/problem+json")
            ok, _ = session.call("search", {"query": "VPN gateway", "as_of": when})
            assert not ok
            shown = cli("search", "--ns", "acme/eng", "VPN", "--as-of", when)
            assert shown.returncode == 3 and shown.stderr.count("\n") == 1 and "Traceback" not in shown.stderr, \
                (when, shown.stderr)
    finally:
        session.close()
    for bad in ("0d", "99999999w", "1x", "3660d1", "3661d"):
        assert cli("token", "create", "--ns", "acme/eng", "--name", "t", "--expires", bad).returncode == 3, bad
    assert cli("policy", "report", "--ns", "acme", "--days", "1e999").returncode in (2, 3)
