"""What an operator sees of a running server: /metrics (Prometheus, behind its own token, bounded
labels), /readyz, and JSON access lines that never hold a token or content."""
from __future__ import annotations

import json

import httpx2

from tests.conftest import make_token
from tests.serving import bearer, start_server

METRICS_TOKEN = "scrape-" + "x" * 24


def test_metrics_readyz_and_access_log(kernel, api_server):
    env = {**api_server.env, "HALOMEM_METRICS_TOKEN": METRICS_TOKEN}
    server = start_server(env, "--rate-limit", "0", "--audit-heads-every", "0")  # access log on by default
    try:
        token = make_token(kernel, "acme/eng", "read,write")
        made = httpx2.post(server.url + "/v1/memories", headers=bearer(token), json={"content": "SecretContent42"})
        found = httpx2.post(server.url + "/v1/search", headers=bearer(token), json={"query": "secretcontent42"})
        assert found.status_code == 200 and httpx2.get(server.url + "/v1/whoami").status_code == 401
        for i in range(60):  # more organisations than the label set keeps apart
            httpx2.get(server.url + "/v1/whoami", headers=bearer(make_token(kernel, f"org{i}", "read")))
        assert httpx2.get(server.url + "/metrics").status_code == 401
        assert httpx2.get(server.url + "/metrics", headers=bearer("wrong")).status_code == 401
        page = httpx2.get(server.url + "/metrics", headers=bearer(METRICS_TOKEN)).text
        assert 'halomem_requests_total{route="POST /v1/search",status="200",tenant="acme"} 1.0' in page
        assert 'halomem_search_seconds_count{driver="fusion"} 1.0' in page
        assert 'halomem_refusals_total{kind="unauthenticated"}' in page
        assert "halomem_db_pool_connections_in_use" in page
        tenants = {line.split('tenant="')[1].split('"')[0] for line in page.splitlines()
                   if line.startswith("halomem_requests_total{")}
        assert len(tenants) <= 52 and "other" in tenants  # 50 organisations, "-" (no caller), "other"
        ready = httpx2.get(server.url + "/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
    finally:
        server.stop()
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith('{"ts"')]
    by_id = {line["request_id"]: line for line in lines}
    assert by_id[found.headers["x-request-id"]]["route"] == "POST /v1/search"
    assert by_id[made.headers["x-request-id"]]["status"] == 201 and by_id[made.headers["x-request-id"]]["principal"]
    assert token not in server.log() and "SecretContent42" not in server.log()


def test_metrics_are_off_without_their_token(api_server):
    r = httpx2.get(api_server.url + "/metrics")
    assert r.status_code == 404 and "HALOMEM_METRICS_TOKEN" in r.json()["detail"]
