"""MCP through the official SDK client: streamable HTTP at /mcp of `halomem serve`, and `halomem mcp`
on stdio acting as HALOMEM_TOKEN."""
import sys

import httpx2
from mcp.client.stdio import StdioServerParameters

from tests.conftest import make_token
from tests.mcp_client import McpSession
from tests.serving import bearer


def test_tools_over_http_with_budget_and_chain(api_server, kernel):
    token = make_token(kernel, "acme/eng", "read,write")
    kernel.remember("acme", "Company holiday is on Friday " + "and more words " * 30)
    session = McpSession(api_server.url, token)
    try:
        assert {"search", "remember", "supersede", "erase", "history"} <= set(session.tools())
        ok, made = session.call("remember", {"content": "Deploys go through ArgoCD canaries", "source": "runbook"})
        assert ok and made["namespace"] == "acme/eng"
        ok, newer = session.call("supersede", {"id": made["id"], "content": "Deploys now use Flux"})
        assert ok and newer["supersedes"] == made["id"]
        ok, chain = session.call("history", {"id": newer["id"]})
        assert ok and [r["id"] for r in chain["chain"]] == [made["id"], newer["id"]]
        ok, found = session.call("search", {"query": "deploys holiday", "k": 10, "token_budget": 20})
        assert ok and found["tokens"] <= 20 or len(found["hits"]) == 1  # the top hit survives alone
        assert all(h["namespace"] in ("acme", "acme/eng") for h in found["hits"])
        ok, lost = session.call("supersede", {"id": made["id"], "content": "again"})
        assert not ok and lost.startswith("conflict")
        ok, refused = session.call("remember", {"content": "x", "namespace": "acme/sales"})
        assert not ok and "namespace" in refused
        ok, erased = session.call("erase", {"id": newer["id"], "reason": "test"})
        assert ok and erased["erased"] == newer["id"]
    finally:
        session.close()


def test_mcp_http_refuses_bad_tokens(api_server, kernel):
    for headers in ({}, bearer("hm_0123456789abcdef_" + "A" * 43), bearer("nonsense")):
        r = httpx2.post(api_server.url + "/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401


def test_stdio_acts_as_the_token_principal(kernel, cli_env):
    token = make_token(kernel, "acme/eng", "read")
    kernel.remember("acme/eng", "The staging cluster is in eu-west-1")
    kernel.remember("acme/sales", "The sales target is secret")
    env = {**cli_env, "HALOMEM_TOKEN": token}
    params = StdioServerParameters(command=sys.executable, args=["-m", "halomem.cli.main", "mcp"], env=env)
    session = McpSession(stdio=params)
    try:
        ok, found = session.call("search", {"query": "staging cluster sales target", "k": 10})
        assert ok and [h["namespace"] for h in found["hits"]] == ["acme/eng"]
        ok, refused = session.call("remember", {"content": "read-only principal"})
        assert not ok and refused.startswith("permission denied")
    finally:
        session.close()


def test_stdio_with_a_bad_token_exits_12(cli):
    result = cli("mcp", env={"HALOMEM_TOKEN": "hm_0123456789abcdef_" + "A" * 43})
    assert result.returncode == 12 and "unauthenticated" in result.stderr
    assert "A" * 43 not in result.stderr
