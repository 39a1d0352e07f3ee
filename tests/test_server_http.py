"""The HTTP API on a real `halomem serve` (127.0.0.1, real embedded PostgreSQL): tokens, problem+json,
limits, closed bodies, and that no secret reaches a response, the server log or the audit trail."""
from datetime import timedelta

import httpx2
import pytest
import sqlalchemy as sa

from tests.conftest import count, make_token
from tests.serving import bearer, start_server


def memories_digest(kernel) -> str:
    with kernel.engine.connect() as conn:
        return conn.execute(sa.text(
            "SELECT coalesce(md5(string_agg(id || namespace || content || coalesce(t_valid_to::text, '')"
            " || coalesce(erased_at::text, ''), ',' ORDER BY id)), '') FROM memories")).scalar_one()


def test_health_docs_and_openapi_are_served(api_server, kernel):
    assert httpx2.get(api_server.url + "/healthz").json()["status"] == "ok"
    spec = httpx2.get(api_server.url + "/openapi.json").json()
    for path in ("/v1/memories", "/v1/search", "/v1/memories/{memory_id}/supersede", "/v1/memories:ingest",
                 "/v1/policies/{target}", "/v1/audit"):
        assert path in spec["paths"]
    assert "swagger" in httpx2.get(api_server.url + "/docs").text.lower()


def test_remember_and_search_shapes(api_server, kernel):
    token = make_token(kernel, "acme/eng")
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        made = http.post("/v1/memories", json={"content": "Deploys go through ArgoCD canaries", "source": "runbook"})
        assert made.status_code == 201
        body = made.json()
        assert set(body) >= {"id", "namespace", "source"} and body["namespace"] == "acme/eng"
        found = http.post("/v1/search", json={"query": "how do we deploy", "k": 5, "token_budget": 500})
        assert found.status_code == 200
        result = found.json()
        assert set(result) >= {"hits", "driver", "requested_driver", "fallback", "request_id", "tokens"}
        hit = result["hits"][0]
        assert set(hit) == {"rank", "score", "tier", "ref", "id", "namespace", "source", "content", "token_estimate",
                         "valid_from", "provenance",
                         "speaker", "session", "said_at"}
        assert hit["id"] == body["id"] and hit["content"] == "Deploys go through ArgoCD canaries"


BAD_TOKENS = {
    "missing": None,
    "not bearer": "Basic dXNlcjpwYXNz",
    "malformed": "Bearer hm_nothex_short",
    "unknown id": "Bearer hm_0123456789abcdef_" + "A" * 43,
}


@pytest.mark.parametrize("case", sorted(BAD_TOKENS))
def test_bad_tokens_are_401_and_write_nothing(api_server, kernel, case):
    headers = {"Authorization": BAD_TOKENS[case]} if BAD_TOKENS[case] else {}
    before = memories_digest(kernel)
    response = httpx2.post(api_server.url + "/v1/memories", json={"content": "intruder"}, headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.headers["www-authenticate"].startswith("Bearer")
    problem = response.json()
    assert problem["status"] == 401 and problem["kind"] == "unauthenticated" and problem["exit_code"] == 12
    assert memories_digest(kernel) == before


def test_wrong_secret_revoked_and_expired_tokens_are_401(api_server, kernel):
    from halomem.auth.store import PrincipalStore
    from halomem.auth.tokens import format_token, parse_token

    good = make_token(kernel, "acme")
    parts = parse_token(good)  # the secret is base64url: it may hold "_" itself
    secret = parts.secret
    wrong = format_token(parts.principal_id, ("B" if secret[0] != "B" else "C") + secret[1:])
    revoked = make_token(kernel, "acme")

    PrincipalStore(kernel.engine).revoke(parse_token(revoked).principal_id, request_id="test")
    expired = make_token(kernel, "acme", expires_in=timedelta(seconds=1))
    import time

    time.sleep(1.2)
    before = memories_digest(kernel)
    for token in (wrong, revoked, expired):
        response = httpx2.post(api_server.url + "/v1/memories", json={"content": "x"}, headers=bearer(token))
        assert response.status_code == 401, response.text
        assert secret not in response.text and parse_token(token).secret not in response.text
    assert httpx2.post(api_server.url + "/v1/memories", json={"content": "ok"}, headers=bearer(good)).status_code == 201
    assert count(kernel, "SELECT count(*) FROM memories") == 1
    assert memories_digest(kernel) != before


def test_revocation_takes_effect_on_the_next_request(api_server, kernel, cli):
    token = make_token(kernel, "acme")
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        assert http.get("/v1/whoami").status_code == 200
        principal_id = http.get("/v1/whoami").json()["principal"]
        revoked = cli("token", "revoke", principal_id)
        assert revoked.returncode == 0, revoked.stderr
        assert http.get("/v1/whoami").status_code == 401


def test_caller_namespace_in_body_or_query_is_refused(api_server, kernel):
    token = make_token(kernel, "acme/eng")
    before = memories_digest(kernel)
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        for body in ({"content": "x", "namespace": "acme/sales"}, {"content": "x", "ns": "acme"}):
            r = http.post("/v1/memories", json=body)
            assert r.status_code == 422 and r.json()["kind"] == "invalid-input"
        r = http.post("/v1/memories", params={"namespace": "acme/sales"}, json={"content": "x"})
        assert r.status_code == 400 and "token decides" in r.json()["detail"]
        r = http.post("/v1/search", json={"query": "x", "namespace": "acme/sales"})
        assert r.status_code == 422
    assert memories_digest(kernel) == before


def test_problem_json_for_each_mapped_error(api_server, kernel):
    token = make_token(kernel, "acme/eng", "read,write")
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        head = http.post("/v1/memories", json={"content": "v1"}).json()["id"]
        assert http.post(f"/v1/memories/{head}/supersede", json={"content": "v2"}).status_code == 201
        cases = [
            (404, http.get("/v1/memories/m_doesnotexist/history")),
            (409, http.post(f"/v1/memories/{head}/supersede", json={"content": "v3"})),
            (403, http.get("/v1/audit")),
            (400, http.post("/v1/search", json={"query": "\x00binary"})),
            (422, http.post("/v1/search", json={"query": "x", "k": 0})),
            (400, http.post("/v1/search", json={"query": "x", "driver": "no-such-driver"})),  # the caller's mistake
        ]
        for status, response in cases:
            assert response.status_code == status, (status, response.text)
            problem = response.json()
            assert response.headers["content-type"].startswith("application/problem+json")
            assert {"type", "title", "status", "detail", "kind", "exit_code"} <= set(problem)
            assert problem["status"] == status and "Traceback" not in response.text
            assert "SELECT" not in response.text


def test_body_limit_is_413(kernel, settings, api_server):
    token = make_token(kernel, "acme")
    small = start_server(api_server.env, "--max-body", "1000")
    try:
        r = httpx2.post(small.url + "/v1/memories", json={"content": "x" * 5000}, headers=bearer(token))
        assert r.status_code == 413 and r.json()["kind"] == "payload-too-large"

        def chunks():
            for _ in range(10):
                yield b"x" * 500

        r = httpx2.post(small.url + "/v1/memories:ingest", content=chunks(), headers=bearer(token))
        assert r.status_code == 413
        assert count(kernel, "SELECT count(*) FROM memories") == 0
    finally:
        small.stop()


def test_rate_limit_is_429_with_retry_after(kernel, api_server):
    token, other = make_token(kernel, "acme"), make_token(kernel, "acme")
    limited = start_server(api_server.env, "--rate-limit", "1", "--burst", "3")
    try:
        with httpx2.Client(base_url=limited.url, headers=bearer(token)) as http:
            codes = [http.get("/v1/whoami") for _ in range(6)]
        refused = [r for r in codes if r.status_code == 429]
        assert refused and int(refused[0].headers["retry-after"]) >= 1
        assert refused[0].json()["kind"] == "rate-limited"
        # per principal: another token is not throttled by the first one's burst
        assert httpx2.get(limited.url + "/v1/whoami", headers=bearer(other)).status_code == 200
    finally:
        limited.stop()


def test_ingest_jsonl_is_all_or_nothing(api_server, kernel):
    token = make_token(kernel, "acme/eng")
    good = b'{"content": "one"}\n{"content": "two", "source": "s"}\n'
    bad = good + b'{"content": ""}\n'
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        r = http.post("/v1/memories:ingest", content=bad)
        assert r.status_code == 422 and ":3:" in r.json()["detail"]
        assert count(kernel, "SELECT count(*) FROM memories") == 0
        r = http.post("/v1/memories:ingest", content=good)
        assert r.status_code == 201 and r.json()["written"] == 2 and r.json()["namespace"] == "acme/eng"
    assert count(kernel, "SELECT count(*) FROM memories WHERE namespace = 'acme/eng'") == 2


def test_secrets_never_stored_logged_or_audited(api_server, kernel, cli):
    created = cli("token", "create", "--ns", "acme/eng", "--name", "ci-bot", "--scope", "read,write", "--json")
    assert created.returncode == 0, created.stderr
    import json

    issued = json.loads(created.stdout)
    token = issued["token"]
    secret = token[len("hm_") + 16 + 1:]  # hm_<16 hex>_<secret>: the secret itself may hold "_"
    assert set(issued) >= {"id", "token", "namespace", "scopes", "expires_at"}
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        http.post("/v1/memories", json={"content": "hello"})
        http.post("/v1/search", json={"query": "hello"})
        http.get("/v1/audit")  # refused: 403
        http.post("/v1/memories", json={"content": "x"}, headers=bearer(token[:-1] + "A"))
    listed = cli("token", "list", "--json")
    assert secret not in listed.stdout and issued["id"] in listed.stdout
    with kernel.engine.connect() as conn:
        for table in ("principals", "audit_log", "memories"):
            dump = conn.execute(sa.text(f"SELECT string_agg(t::text, '|') FROM {table} t")).scalar_one() or ""
            assert secret not in dump, table
    assert secret not in api_server.log()
    tail = cli("audit", "tail", "-n", "50", "--json")
    assert secret not in tail.stdout
    rows = json.loads(tail.stdout)
    assert any(r["principal"] == issued["id"] and r["action"] == "remember" for r in rows)
    assert any(r["principal"] == issued["id"] and r["detail"].startswith("audit refused") for r in rows)
