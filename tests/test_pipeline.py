"""The one request pipeline (halomem.pipeline) on real servers: each finding of the pipeline issue
as a test that failed before it. Real `halomem serve` on 127.0.0.1, real embedded PostgreSQL, the
MCP SDK's own client."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2
import pytest
from mcp.client.stdio import StdioServerParameters

from tests.conftest import count, make_token
from tests.mcp_client import McpSession
from tests.serving import bearer, start_server

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def audit_rows(kernel, since: int = 0) -> list:  # noqa: ANN001 - audit.AuditRow, each with its one-line detail
    rows = kernel.audit_tail(100_000)
    return [row for row in rows if row.seq > since]


def last_seq(kernel) -> int:
    return count(kernel, "SELECT coalesce(max(seq), 0) FROM audit_log")


def mcp_call(url: str, token: str | None, tool: str, arguments: dict, rid: int = 1) -> httpx2.Response:
    headers = {**MCP_HEADERS, **(bearer(token) if token else {})}
    return httpx2.post(url + "/mcp", headers=headers, json={"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                                           "params": {"name": tool, "arguments": arguments}})


# --- 1. entity registration is no oracle ------------------------------------------------------
def test_entity_registration_answers_nothing_about_rows_the_caller_cannot_read(api_server, kernel):
    kernel.remember("O/eng/infra", "The root password for the vault is ZebraXXXX")
    kernel.remember("O/sales", "Quarterly target for Falcon deal is confidential")
    kernel.remember("O/eng", "ZebraXXXX is also the name of our mascot")
    eng = make_token(kernel, "O/eng", "read,write")
    org = make_token(kernel, "O", "read,write")
    with httpx2.Client(base_url=api_server.url, headers=bearer(eng)) as http:
        right = http.post("/v1/entities", json={"name": "ZebraXXXX"}).json()
        wrong = http.post("/v1/entities", json={"name": "ZebraYYYY", "aliases": [f"Guess{i}" for i in range(50)]})
        assert wrong.status_code == 201
        # linked counts only what O/eng reads: its own row, never the descendant's
        assert right["linked"] == 1 and wrong.json()["linked"] == 0
    with httpx2.Client(base_url=api_server.url, headers=bearer(org)) as http:
        guesses = [http.post("/v1/entities", json={"name": name}).json() for name in ("Falcon", "Pelican")]
        assert [g["linked"] for g in guesses] == [0, 0]  # O/sales's word and a wrong guess look the same
        assert {k for g in guesses for k in g} == {"id", "name", "aliases", "linked", "namespace", "request_id"}
    # the descendant's own callers still find the ancestor's entity linked to their rows (graph driver)
    linked_below = count(kernel, "SELECT count(*) FROM mentions m JOIN memories r ON r.id = m.memory_id"
                                 " WHERE r.namespace = 'O/eng/infra'")
    assert linked_below == 1
    # audit rows count only the readable links too
    linked = [r.fields["linked"] for r in audit_rows(kernel) if r.action == "entity" and r.outcome == "ok"]
    assert linked and set(linked) <= {0, 1}


def test_entity_requests_are_bounded(api_server, kernel):
    token = make_token(kernel, "O/eng", "read,write")
    started = time.monotonic()
    r = httpx2.post(api_server.url + "/v1/entities", headers=bearer(token),
                    json={"name": "Big", "aliases": [f"a{i}" for i in range(5000)]})
    assert r.status_code == 400 and "at most 50 aliases" in r.json()["detail"]
    assert time.monotonic() - started < 5 and r.json()["request_id"]
    assert count(kernel, "SELECT count(*) FROM entities") == 0


# --- 2. every transport is rate limited, unauthenticated callers too --------------------------
def test_rate_limit_applies_to_mcp_and_to_unauthenticated_callers(kernel, api_server):
    # a token every 100 s: the exact sequence below holds however slowly a loaded machine answers
    server = start_server(api_server.env, "--rate-limit", "0.01", "--burst", "2", "--audit-heads-every", "0")
    try:
        token = make_token(kernel, "acme/eng", "read")
        statuses = []
        for i in range(6):
            r = mcp_call(server.url, token, "search", {"query": "anything"}, rid=i)
            statuses.append(r.status_code)
        assert statuses[:2] == [200, 200] and set(statuses[2:]) == {429}
        assert r.headers["content-type"].startswith("application/problem+json") and "retry-after" in r.headers
        bad = [httpx2.get(server.url + "/v1/whoami", headers=bearer("hm_0123456789abcdef_" + "A" * 43)).status_code
               for _ in range(10)]
        assert bad[:2] == [401, 401] and set(bad[2:]) == {429}
    finally:
        server.stop()


# --- 3. one audit row per request, by the documented rule -------------------------------------
def test_audit_accounting_over_every_transport(kernel, api_server, cli_env):
    server = start_server(api_server.env, "--rate-limit", "0.01", "--burst", "3", "--audit-heads-every", "0",
                          "--audit-refusal-window", "3600", "--max-body", "2000")
    try:
        token = make_token(kernel, "acme/eng", "read,write")
        other = make_token(kernel, "other/org", "read,write,admin")
        since = last_seq(kernel)
        url = server.url
        expected: list[tuple[str, str, str]] = []  # (namespace, action, detail start) in order
        r = httpx2.post(url + "/v1/memories", headers=bearer(token), json={"content": "x", "namespace": "other"})
        assert r.status_code == 422
        expected.append(("acme/eng", "request", "POST /v1/memories refused kind=invalid-input status=422"))
        r = httpx2.post(url + "/v1/memories", headers=bearer(token), content=b"{" + b" " * 5000 + b"}")
        assert r.status_code == 413 and r.json()["request_id"] == r.headers["x-request-id"]
        expected.append(("acme/eng", "request", "POST /v1/memories refused kind=payload-too-large status=413"))
        r = mcp_call(url, token, "search", {"query": "x", "namespace": "other/org"})
        assert r.status_code == 200 and r.json()["result"]["isError"]
        expected.append(("acme/eng", "request", "mcp tools/call search refused kind=invalid-input"))
        # the principal's bucket (burst 3) is empty now: 429s, the first audited, the rest counted
        limited = [httpx2.get(url + "/v1/whoami", headers=bearer(token)) for _ in range(4)]
        assert [x.status_code for x in limited] == [429] * 4
        expected.append(("acme/eng", "request", "GET /v1/whoami refused kind=rate-limited status=429"))
        # a refused admin request is audited under the caller's own namespace, not the target's
        r = httpx2.put(url + "/v1/policies/acme/eng", headers=bearer(other), json={"retriever": "keyword"})
        assert r.status_code == 403
        expected.append(("other/org", "policy", "policy refused kind=permission-denied"))
        for _ in range(3):  # unauthenticated: one row, then counted
            assert httpx2.get(url + "/v1/whoami").status_code == 401
        expected.append(("-", "request", "GET /v1/whoami refused kind=unauthenticated status=401"))
        r = httpx2.get(url + "/v1/nothing-here", headers=bearer(other))
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")
        expected.append(("other/org", "request", "GET (unknown route) refused kind=not-found status=404"))
        r = httpx2.post(url + "/mcp", headers={**MCP_HEADERS, **bearer(other)},
                        json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
        assert r.status_code == 200
        expected.append(("other/org", "request", "mcp tools/list ok"))
        mcp_rid = r.headers["x-request-id"]
        rows = audit_rows(kernel, since)
        got = [(row.actor_ns, row.action, row.detail) for row in rows]
        assert len(got) == len(expected), got
        for (ns, action, detail), want in zip(got, expected):
            assert (ns, action) == want[:2] and detail.startswith(want[2]), (got, want)
        assert rows[-1].request_id == mcp_rid  # the header's id is the audit row's, on /mcp too
        assert count(kernel, "SELECT count(*) FROM audit_log WHERE actor_ns LIKE 'acme%' AND principal = "
                             f"'{token[3:19]}'") >= 4
    finally:
        server.stop()
    # at shutdown the windows still counting are summarized: 3 more 429s, 2 more 401s
    summaries = {(r.actor_ns, r.detail.split(" window")[0]) for r in audit_rows(kernel, since)
                 if r.detail.startswith("requests refused")}
    assert summaries == {("acme/eng", "requests refused kind=rate-limited suppressed=3"),
                         ("-", "requests refused kind=unauthenticated suppressed=2")}
    assert kernel.audit_verify().ok


# --- 4. bad input is a 4xx problem with a request id, never a 5xx -----------------------------
def test_hostile_input_is_refused_with_4xx(api_server, kernel):
    token = make_token(kernel, "acme/eng", "read,write,admin")
    kernel.remember("acme/eng", "The deploy runbook lives in the wiki")
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        cases = [
            http.get("/v1/memories/m_%00x/history"),
            http.post("/v1/search", json={"query": "deploy", "sources": ["a\x00b"]}),
            http.post("/v1/search", content=b'{"query": "deploy \\ud800"}', headers={"content-type": "application/json"}),
            http.post("/v1/memories", content=b'{"content": "x \\udfff"}', headers={"content-type": "application/json"}),
            http.post("/v1/memories", content=b'{"content": "x", "source": "\\ud800"}',
                      headers={"content-type": "application/json"}),
            http.post("/v1/tokens/acme/eng", json={"name": "forever", "expires": "999999w"}),
            http.delete("/v1/search"),
            http.get("/nowhere"),
            http.post("/v1/search", json={"query": "deploy", "k": True}),
        ]
        for r in cases:
            assert 400 <= r.status_code < 500, (cases.index(r), r.status_code, r.text)
            assert r.headers["content-type"].startswith("application/problem+json"), r.text
            assert r.json()["request_id"] == r.headers["x-request-id"]
        assert [c.status_code for c in cases[-3:]] == [405, 404, 422]

        def chunks():
            for _ in range(40):
                yield b"x" * 1024 * 1024

        big = http.post("/v1/memories:ingest", content=chunks())  # chunked: no Content-Length
        assert big.status_code == 413 and big.json()["request_id"]
    assert count(kernel, "SELECT count(*) FROM memories") == 1


def test_cli_refuses_an_overlong_expiry_in_one_line(cli):
    result = cli("token", "create", "--ns", "acme/eng", "--name", "x", "--expires", "999999w")
    assert result.returncode == 3 and result.stderr.count("\n") == 1 and "limit" in result.stderr


# --- 5. tokens never outlive or outrank their makers --------------------------------------------
def test_minted_tokens_are_capped_and_revoked_with_their_maker(kernel, api_server):
    from datetime import timedelta

    second = start_server(api_server.env, "--rate-limit", "0", "--audit-heads-every", "0")
    try:
        admin = make_token(kernel, "acme", "read,admin", expires_in=timedelta(hours=1))
        with httpx2.Client(base_url=api_server.url, headers=bearer(admin)) as http:
            wider = http.post("/v1/tokens/acme/eng", json={"name": "w", "scopes": ["read", "write"]})
            assert wider.status_code == 403
            longer = http.post("/v1/tokens/acme/eng", json={"name": "l", "scopes": ["read"], "expires": "2d"})
            assert longer.status_code == 400 and "outlive" in longer.json()["detail"]
            child = http.post("/v1/tokens/acme/eng", json={"name": "c", "scopes": ["read", "admin"]}).json()
            assert child["expires_at"] is not None and child["created_by"] == admin[3:19]
        with httpx2.Client(base_url=second.url, headers=bearer(child["token"])) as http:  # another process
            grandchild = http.post("/v1/tokens/acme/eng", json={"name": "g", "scopes": ["read"]}).json()
            assert http.get("/v1/whoami").status_code == 200
        assert httpx2.get(api_server.url + "/v1/whoami", headers=bearer(grandchild["token"])).status_code == 200
        # the operator revokes the first admin token: everything minted from it goes too
        from halomem.ops import for_operator

        for_operator(kernel, "acme").revoke_token(admin[3:19])
        for url in (api_server.url, second.url):
            for tok in (admin, child["token"], grandchild["token"]):
                assert httpx2.get(url + "/v1/whoami", headers=bearer(tok)).status_code == 401
        revoked = [r.detail for r in audit_rows(kernel) if r.detail.startswith("token revoked")]
        assert len(revoked) == 3
    finally:
        second.stop()


# --- 6. SIGTERM runs the same shutdown as SIGINT --------------------------------------------------
def _postmaster_running(home) -> bool:  # noqa: ANN001
    pid_file = home / "pgdata" / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_serve_stops_cleanly_on_signal(sig, cli_env):
    home = Path(tempfile.mkdtemp(prefix="halomem-sig-", dir="/tmp"))
    env = {**cli_env, "HALOMEM_HOME": str(home), "HALOMEM_EMBEDDER": "hash"}
    env.pop("HALOMEM_DATABASE_URL", None)
    server = start_server(env, "--rate-limit", "0", "--audit-heads-every", "0", timeout=120)
    made = subprocess.run([sys.executable, "-m", "halomem.cli.main", "token", "create", "--ns", "acme/eng",
                           "--name", "w", "--scope", "read,write"], env=env, capture_output=True, text=True, timeout=120)
    token = made.stdout.strip()
    acknowledged: list[str] = []
    lock = threading.Lock()

    def writer(n: int) -> None:  # keeps writing until the server goes away; keeps what was acknowledged
        with httpx2.Client(base_url=server.url, headers=bearer(token), timeout=30) as http:
            for i in range(40):
                try:
                    r = http.post("/v1/memories", json={"content": f"acknowledged write {n}-{i}"})
                except httpx2.HTTPError:
                    return
                if r.status_code != 201:
                    return
                with lock:
                    acknowledged.append(r.json()["id"])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    while len(acknowledged) < 20:  # under load: the signal lands while writes are in flight
        time.sleep(0.01)
    assert _postmaster_running(home)
    server.proc.send_signal(getattr(signal, sig))
    assert server.proc.wait(timeout=60) in (0, 130, 143)
    for t in threads:
        t.join(timeout=60)
    ids = list(acknowledged)
    assert 20 <= len(ids) <= 160
    log = server.log()
    assert "Traceback" not in log
    heads = (home / "audit-heads.log").read_text()
    assert heads.strip()  # the head was recorded at exit
    deadline = time.monotonic() + 30
    while _postmaster_running(home) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _postmaster_running(home)  # the embedded server this process started is stopped
    verified = subprocess.run([sys.executable, "-m", "halomem.cli.main", "audit", "verify"], env=env,
                              capture_output=True, text=True, timeout=120)
    assert verified.returncode == 0, verified.stderr
    shown = subprocess.run([sys.executable, "-m", "halomem.cli.main", "search", "--ns", "acme/eng", "--json",
                            "acknowledged write", "--k", "200"], env=env, capture_output=True, text=True, timeout=120)
    found = {h["id"] for h in json.loads(shown.stdout)["hits"]}
    assert set(ids) <= found  # no acknowledged write lost (a write in flight may have landed unacknowledged)


def test_mcp_stdio_stops_cleanly_on_sigterm(kernel, cli_env):
    token = make_token(kernel, "acme/eng", "read")
    env = {**cli_env, "HALOMEM_TOKEN": token}
    proc = subprocess.Popen([sys.executable, "-m", "halomem.cli.main", "mcp"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(3)
    before = (kernel.settings.home / "audit-heads.log")
    before.unlink(missing_ok=True)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143 and b"Traceback" not in stderr
    assert before.exists() and before.read_text().strip()


# --- 7. erase --purge is idempotent ----------------------------------------------------------------
def test_purge_after_a_rest_erase(api_server, kernel, cli):
    token = make_token(kernel, "acme/eng", "read,write")
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        made = http.post("/v1/memories", json={"content": "Wipe me: PurgeCanary4471"}).json()
        assert http.post(f"/v1/memories/{made['id']}/erase", json={"reason": "request"}).status_code == 200
    result = cli("erase", made["id"], "--ns", "acme/eng", "--purge")
    assert result.returncode == 0, result.stderr
    assert "already erased" in result.stderr and "purging" in result.stderr
    assert any(r.action == "purge" for r in audit_rows(kernel))


# --- 8. MCP over stdio: one line for every refusal ---------------------------------------------------
def test_stdio_token_revoked_mid_session_is_one_line_and_audited(kernel, cli_env):
    token = make_token(kernel, "acme/eng", "read")
    env = {**cli_env, "HALOMEM_TOKEN": token}
    params = StdioServerParameters(command=sys.executable, args=["-m", "halomem.cli.main", "mcp"], env=env)
    session = McpSession(stdio=params)
    try:
        ok, _ = session.call("search", {"query": "anything"})
        assert ok
        from halomem.ops import for_operator

        for_operator(kernel, "acme/eng").revoke_token(token[3:19])
        ok, text = session.call("search", {"query": "anything"})
        assert not ok and text.startswith("unauthenticated:") and "revoked" in text and "\n" not in text
    finally:
        session.close()
    rows = [r for r in audit_rows(kernel) if r.actor_ns == "-" and "unauthenticated" in r.detail]
    assert len(rows) == 1 and rows[0].detail.startswith("mcp tools/call search refused kind=unauthenticated")


def test_stdio_without_a_token_says_so(cli):
    result = cli("mcp", env={"HALOMEM_TOKEN": ""})
    assert result.returncode == 12 and result.stderr.count("\n") == 1 and "HALOMEM_TOKEN is not set" in result.stderr



# --- 9. one supersedence rule for supersede and keyed ingest ---------------------------------------
def test_a_successor_keeps_its_source_whichever_path_wrote_it(kernel, tmp_path):
    first = tmp_path / "a.jsonl"
    first.write_text('{"key": "runbook/deploys", "content": "Deploys use ArgoCD", "source": "runbook"}\n')
    kernel.ingest("acme/eng", first)
    second = tmp_path / "b.jsonl"
    second.write_text('{"key": "runbook/deploys", "content": "Deploys use Flux"}\n')  # no source named
    report = kernel.ingest("acme/eng", second)
    [(old, new)] = report.superseded
    by_ingest = kernel.history("acme/eng", new)
    made = kernel.remember("acme/eng", "On-call hands over on Mondays", source="wiki")
    by_supersede = kernel.history("acme/eng", kernel.supersede("acme/eng", made.id, "On-call hands over on Tuesdays").id)
    assert [r.source for r in by_ingest] == ["runbook", "runbook"]
    assert [r.source for r in by_supersede] == ["wiki", "wiki"]


def test_serve_stops_on_sigterm_even_while_a_long_batch_runs(cli_env):
    """A write still running after the drain does not hold the process: it rolls back (all or
    nothing), the head is recorded, the embedded server stops, the trail verifies."""
    from halomem.limits import MAX_BATCH, MAX_CONTENT_CHARS

    home = Path(tempfile.mkdtemp(prefix="halomem-sig-", dir="/tmp"))
    env = {**cli_env, "HALOMEM_HOME": str(home), "HALOMEM_EMBEDDER": "hash"}
    env.pop("HALOMEM_DATABASE_URL", None)
    server = start_server(env, "--rate-limit", "0", "--audit-heads-every", "0", "--drain-seconds", "0",
                          timeout=120)
    made = subprocess.run([sys.executable, "-m", "halomem.cli.main", "token", "create", "--ns", "acme/eng",
                           "--name", "w", "--scope", "read,write"], env=env, capture_output=True, text=True, timeout=120)
    token = made.stdout.strip()
    words = " ".join(f"word{i}" for i in range(MAX_CONTENT_CHARS // 8))[:MAX_CONTENT_CHARS]
    batch = {"memories": [{"content": f"{i} {words}"[:MAX_CONTENT_CHARS]} for i in range(MAX_BATCH)]}
    answered: list[int] = []

    def send() -> None:
        try:
            answered.append(httpx2.post(server.url + "/v1/memories:batch", json=batch, headers=bearer(token),
                                        timeout=300).status_code)
        except httpx2.HTTPError:
            answered.append(0)

    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(1.0)  # the batch is being read, validated or embedded
    stopped_at = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) in (0, 143)
    assert time.monotonic() - stopped_at < 30
    sender.join(timeout=60)
    assert "Traceback" not in server.log() and (home / "audit-heads.log").read_text().strip()
    deadline = time.monotonic() + 30
    while _postmaster_running(home) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _postmaster_running(home)
    counter = ("import sqlalchemy as sa\nfrom halomem.kernel import Kernel\nwith Kernel.boot(mount_plugins=False) as k:\n"
               "    print(k.engine.connect().scalar(sa.text(\"SELECT count(*) FROM memories WHERE namespace = 'acme/eng'\")))")
    counted = subprocess.run([sys.executable, "-c", counter], env=env, capture_output=True, text=True, timeout=120)
    assert counted.returncode == 0, counted.stderr
    stored = int(counted.stdout.strip())
    assert stored == (MAX_BATCH if answered == [201] else 0), (answered, stored)  # all or nothing
    verified = subprocess.run([sys.executable, "-m", "halomem.cli.main", "audit", "verify"], env=env,
                              capture_output=True, text=True, timeout=120)
    assert verified.returncode == 0, verified.stderr
