"""`halomem mcp config --host ...` for each agent host: the stdio server is launched exactly as the
printed configuration says (command, args, env, through the MCP SDK's stdio client, as a host does)
and lists its tools as the token's principal; with --url, the printed endpoint and header reach
`halomem serve`'s /mcp. Refusals are one line with exit 3."""
from __future__ import annotations

import json

import pytest
from mcp.client.stdio import StdioServerParameters

from halomem.cli.mcp_hosts import HOSTS
from tests.conftest import make_token
from tests.mcp_client import McpSession


def _entry(printed: str, host: str) -> dict:
    document = json.loads(printed)
    servers = document["servers" if host == "vscode" else "mcpServers"]
    assert list(servers) == ["halomem"]
    return servers["halomem"]


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_each_hosts_stdio_config_starts_the_server_it_describes(host, kernel, cli):
    token = make_token(kernel, "acme/eng", "read")
    kernel.remember("acme/eng", "The staging cluster is in eu-west-1")
    made = cli("mcp", "config", "--host", host, "--token", token)
    assert made.returncode == 0, made.stderr
    assert made.stderr.startswith("paste into ")
    entry = _entry(made.stdout, host)
    assert entry.get("type", "stdio") == "stdio" and entry["env"]["HALOMEM_TOKEN"] == token
    session = McpSession(stdio=StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"]))
    try:
        assert {"search", "recent", "whoami"} <= set(session.tools()) and "remember" not in session.tools()  # read-only
        ok, me = session.call("whoami", {})
        assert ok and me["namespace"] == "acme/eng"
        ok, found = session.call("search", {"query": "where is the staging cluster"})
        assert ok and found["hits"][0]["content"] == "The staging cluster is in eu-west-1"
    finally:
        session.close()


@pytest.mark.parametrize("host", ["claude-code", "cursor", "vscode"])
def test_each_hosts_http_config_reaches_the_servers_endpoint(host, api_server, kernel, cli):
    token = make_token(kernel, "acme/eng", "read")
    made = cli("mcp", "config", "--host", host, "--url", api_server.url, env={"HALOMEM_TOKEN": token})
    assert made.returncode == 0, made.stderr
    entry = _entry(made.stdout, host)
    assert entry["url"] == api_server.url + "/mcp" and entry.get("type", "http") == "http"
    scheme, _, secret = entry["headers"]["Authorization"].partition(" ")
    assert scheme == "Bearer" and secret == token
    session = McpSession(url=entry["url"].removesuffix("/mcp"), token=secret)
    try:
        assert "search" in session.tools()
    finally:
        session.close()


def test_mcp_config_refusals_are_one_line(cli):
    unknown = cli("mcp", "config", "--host", "notepad", "--token", "hm_x")
    assert unknown.returncode == 3 and unknown.stderr.count("\n") == 1 and "claude-desktop" in unknown.stderr
    desktop = cli("mcp", "config", "--host", "claude-desktop", "--url", "http://127.0.0.1:1", "--token", "hm_x")
    assert desktop.returncode == 3 and "stdio" in desktop.stderr and desktop.stdout == ""
    tokenless = cli("mcp", "config", "--host", "cursor")
    assert tokenless.returncode == 12 and "HALOMEM_TOKEN" in tokenless.stderr and tokenless.stdout == ""
