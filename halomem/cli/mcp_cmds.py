"""mcp: the stdio server for a local agent host (acting as the principal of HALOMEM_TOKEN), and
`mcp config`, the host's configuration for it or for `halomem serve`'s HTTP endpoint."""
from __future__ import annotations

import json
import os
import sys
from typing import Optional

import typer

from .common import err, kernel

app = typer.Typer(invoke_without_command=True, no_args_is_help=False,
                  help="MCP over stdio for a local agent host, acting as the principal of HALOMEM_TOKEN.")


@app.callback()
def mcp(ctx: typer.Context,
        rate_limit: float = typer.Option(100.0, "--rate-limit", envvar="HALOMEM_RATE_LIMIT",
                                         help="Requests/s (0: no limit)."),
        burst: int = typer.Option(200, "--burst", help="Requests at once.")) -> None:
    """MCP over stdio for a local agent host, acting as the principal of HALOMEM_TOKEN
    (`halomem mcp config --host ...` prints a host's configuration for it)."""
    if ctx.invoked_subcommand is not None:
        return
    from ..errors import AuthenticationError
    from ..pipeline import Pipeline
    from ..server.mcp_tools import build_mcp

    token = os.environ.get("HALOMEM_TOKEN", "").strip()
    if not token:
        raise AuthenticationError("HALOMEM_TOKEN is not set: `halomem mcp` acts as the principal of that token"
                                  " (halomem token create ...)")
    k = kernel()
    pipeline = Pipeline(k, rate=rate_limit, burst=burst)
    pipeline.authenticate(pipeline.begin("mcp start", "stdio"), token)  # fail fast: exit 12 on a bad token
    try:
        build_mcp(k, pipeline, stdio_token=token).run("stdio")
    finally:
        pipeline.close()


@app.command("config")
def config(host: str = typer.Option(..., "--host", help="claude-desktop, claude-code, cursor or vscode."),
           url: Optional[str] = typer.Option(None, "--url", help="A `halomem serve` base URL: configure its "
                                             "streamable HTTP endpoint (/mcp) instead of the stdio server."),
           token: Optional[str] = typer.Option(None, "--token", envvar="HALOMEM_TOKEN", show_envvar=True,
                                               help="The token the host acts as (default: HALOMEM_TOKEN).")) -> None:
    """Print an agent host's MCP configuration for halomem (JSON; stderr names the file).

    The stdio server on this data dir, or with --url the HTTP endpoint. It holds the token's
    secret: keep the file private."""
    from . import startup
    from .common import settings
    from .mcp_hosts import HOSTS, host_config
    from ..errors import AuthenticationError

    startup.end()
    if not token or not token.strip():
        raise AuthenticationError("no token: pass --token or set HALOMEM_TOKEN (halomem token create ...)")
    env = {}
    if url is None:
        s = settings()
        env["HALOMEM_HOME"] = str(s.home)
        if os.environ.get("HALOMEM_DATABASE_URL"):
            env["HALOMEM_DATABASE_URL"] = os.environ["HALOMEM_DATABASE_URL"]
    document = host_config(host, token=token.strip(), env=env, url=url)
    err.print(f"paste into {HOSTS[host]}", markup=False, highlight=False)
    sys.stdout.write(json.dumps(document, indent=2) + "\n")
