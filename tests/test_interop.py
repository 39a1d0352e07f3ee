"""MCP clients halomem did not write: the official TypeScript SDK (npm) over stdio and streamable
HTTP. Its callTool validates each structuredContent against the tool's outputSchema itself."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from halomem import __version__
from tests.conftest import make_token

INTEROP = Path(__file__).parent / "interop"
ALL_TOOLS = {"search", "get", "recent", "history", "whoami", "entities", "concepts", "remember", "remember_many", "remember_conversation",
             "supersede", "erase", "feedback"}


@pytest.fixture(scope="module")
def ts_client() -> Path:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed (the machine has node 20)")
    if not (INTEROP / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error"],
                       cwd=INTEROP, check=True, capture_output=True, timeout=300)
    return INTEROP / "ts_client.mjs"


def check_transcript(out: dict) -> None:
    assert out["server"]["name"] == "halomem" and out["server"]["version"] == __version__
    tools = {t["name"]: t for t in out["tools"]}
    assert set(tools) == ALL_TOOLS and all(t["title"] and t["outputSchema"] for t in tools.values())
    assert tools["search"]["readOnly"] is True and tools["erase"]["readOnly"] is False
    for name, call in out["calls"].items():
        assert not call["isError"] and call["structured"] is not None and call["text"], (name, call)
    hits = out["calls"]["search"]["structured"]["hits"]
    assert hits and hits[0]["content"] == "The TS client was here" and hits[0]["valid_from"]
    assert out["calls"]["whoami"]["structured"]["namespace"] == "acme/eng"
    assert out["refused"]["isError"] and out["refused"]["text"] == "invalid input: k: Input should be a valid integer"


def test_typescript_sdk_over_streamable_http(ts_client, api_server, kernel):
    token = make_token(kernel, "acme/eng", "read,write")
    run = subprocess.run(["node", str(ts_client), "http", api_server.url, token], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    check_transcript(json.loads(run.stdout))


def test_typescript_sdk_over_stdio(ts_client, kernel, cli_env):
    token = make_token(kernel, "acme/eng", "read,write")
    halomem = Path(sys.executable).with_name("halomem")  # an absolute path, as an MCP host needs
    env = {**os.environ, **cli_env, "HALOMEM_TOKEN": token}
    run = subprocess.run(["node", str(ts_client), "stdio", str(halomem)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    check_transcript(json.loads(run.stdout))
    assert "Traceback" not in run.stderr
