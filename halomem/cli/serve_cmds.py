"""serve (HTTP API + MCP over streamable HTTP) and mcp (stdio, acting as HALOMEM_TOKEN)."""
from __future__ import annotations

import os

import typer

from .common import err, kernel


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(host: str = typer.Option("127.0.0.1", help="Interface to bind (loopback by default)."),
              port: int = typer.Option(8080, help="TCP port."),
              rate_limit: float = typer.Option(100.0, "--rate-limit", envvar="HALOMEM_RATE_LIMIT",
                                               help="Requests/s per principal (0: no limit)."),
              burst: int = typer.Option(200, "--burst", help="Requests a principal may send at once."),
              max_body: int = typer.Option(16 * 1024 * 1024, "--max-body", help="Largest request body, bytes."),
              access_log: bool = typer.Option(True, "--access-log/--no-access-log"),
              heads_every: float = typer.Option(60.0, "--audit-heads-every", help="Seconds between audit heads "
                                                "recorded outside the database (0: only at exit)."),
              refusal_window: float = typer.Option(60.0, "--audit-refusal-window", min=0.0, help="Seconds in which "
                                                   "repeated 401/429 refusals share one audit row and a summary.")
              ) -> None:
        """Serve agents: the HTTP JSON API (/v1, /docs) and MCP (/mcp); every caller needs a token."""
        from ..server.app import serve as run_server

        k = kernel()
        err.print(f"halomem: serving http://{host}:{port} (API /v1, docs /docs, MCP /mcp)", markup=False)
        run_server(k, host=host, port=port, rate=rate_limit, burst=burst, max_body=max_body, access_log=access_log,
                   heads_every=heads_every, refusal_window=refusal_window)

    @app.command()
    def mcp(rate_limit: float = typer.Option(100.0, "--rate-limit", envvar="HALOMEM_RATE_LIMIT",
                                             help="Requests/s (0: no limit)."),
            burst: int = typer.Option(200, "--burst", help="Requests at once.")) -> None:
        """MCP over stdio for a local agent host, acting as the principal of HALOMEM_TOKEN."""
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
