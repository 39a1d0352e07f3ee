"""A Python agent framework halomem did not write: the OpenAI Agents SDK's own MCP servers
(MCPServerStreamableHttp, MCPServerStdio) list and call every tool, and turn each into the
function tool an agent's model would see, with the schemas converted to OpenAI's strict mode."""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from agents.mcp.util import MCPUtil

from tests.conftest import make_token

CALLS = [("remember", {"content": "The agents SDK was here", "source": "interop"}),
         ("search", {"query": "agents SDK", "k": 3}), ("recent", {"limit": 2}), ("whoami", {}),
         ("entities", {}), ("concepts", {"query": "anything"})]


async def transcript(server) -> dict:  # noqa: ANN001 - an agents.mcp.MCPServer
    async with server:
        tools = await server.list_tools()
        function_tools = [MCPUtil.to_function_tool(t, server, convert_schemas_to_strict=True) for t in tools]
        out = {"tools": sorted(t.name for t in tools), "strict": {f.name: f.strict_json_schema for f in function_tools},
               "calls": {}}
        for name, args in CALLS:
            result = await server.call_tool(name, args)
            out["calls"][name] = {"isError": bool(result.is_error), "structured": result.structured_content,
                                  "text": result.content[0].text if result.content else ""}
        refused = await server.call_tool("search", {"query": "x", "k": "3"})
        out["refused"] = {"isError": bool(refused.is_error), "text": refused.content[0].text}
    return out


def check(out: dict) -> None:
    assert len(out["tools"]) == 13 and all(out["strict"].values())
    for name, call in out["calls"].items():
        assert not call["isError"] and call["structured"] is not None and call["text"], (name, call)
    assert out["calls"]["search"]["structured"]["hits"][0]["content"] == "The agents SDK was here"
    assert out["refused"] == {"isError": True, "text": "invalid input: k: Input should be a valid integer"}


def test_openai_agents_sdk_over_streamable_http(api_server, kernel):
    token = make_token(kernel, "acme/eng", "read,write")
    server = MCPServerStreamableHttp({"url": api_server.url + "/mcp", "headers": {"Authorization": f"Bearer {token}"}},
                                     client_session_timeout_seconds=30)
    check(asyncio.run(transcript(server)))


def test_openai_agents_sdk_over_stdio(kernel, cli_env):
    token = make_token(kernel, "acme/eng", "read,write")
    halomem = str(Path(sys.executable).with_name("halomem"))
    server = MCPServerStdio({"command": halomem, "args": ["mcp"], "env": {**os.environ, **cli_env,
                                                                        "HALOMEM_TOKEN": token}},
                            client_session_timeout_seconds=60)
    check(asyncio.run(transcript(server)))
