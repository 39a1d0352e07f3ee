"""What each agent host's configuration file wants for halomem's MCP server: the stdio server
(`halomem mcp`, acting as the principal of HALOMEM_TOKEN) or the HTTP endpoint of `halomem serve`
(`/mcp`, the token in the Authorization header). One function per shape; `halomem mcp config`
prints the result and tests/test_mcp_hosts.py launches exactly what it says."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError

HOSTS = {
    "claude-desktop": "claude_desktop_config.json (Settings > Developer > Edit Config)",
    "claude-code": ".mcp.json in the project (or: claude mcp add-json halomem '<the halomem entry>')",
    "cursor": "~/.cursor/mcp.json (or .cursor/mcp.json in the project)",
    "vscode": ".vscode/mcp.json in the workspace",
}
SERVER_NAME = "halomem"


def stdio_command() -> tuple[str, list[str]]:
    """This installation's own halomem, by absolute path: a host starts it without the venv on PATH."""
    script = Path(sys.executable).parent / "halomem"
    if script.exists():
        return str(script), ["mcp"]
    return sys.executable, ["-m", "halomem.cli.main", "mcp"]


def host_config(host: str, *, token: str, env: dict[str, str], url: str | None = None) -> dict[str, Any]:
    """The host's JSON document with one server, halomem: stdio (``env``: what `halomem mcp` needs
    besides the token, such as HALOMEM_HOME) or, with ``url``, streamable HTTP."""
    if host not in HOSTS:
        raise InvalidInputError(f"unknown host {host!r}: one of {', '.join(HOSTS)}")
    if url is not None:
        if host == "claude-desktop":
            raise InvalidInputError("Claude Desktop's config file takes local (stdio) servers only: drop --url, or"
                                    " add the endpoint under Settings > Connectors")
        endpoint = url.rstrip("/") + ("" if url.rstrip("/").endswith("/mcp") else "/mcp")
        headers = {"Authorization": f"Bearer {token}"}
        entry: dict[str, Any] = {"url": endpoint, "headers": headers}
        if host in ("claude-code", "vscode"):
            entry = {"type": "http", **entry}
    else:
        command, args = stdio_command()
        entry = {"command": command, "args": args, "env": {**env, "HALOMEM_TOKEN": token}}
        if host in ("claude-code", "vscode"):
            entry = {"type": "stdio", **entry}
    return {"servers" if host == "vscode" else "mcpServers": {SERVER_NAME: entry}}
