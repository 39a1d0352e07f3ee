"""serve: the HTTP API and MCP over streamable HTTP (halomem mcp, the stdio server, is mcp_cmds)."""
from __future__ import annotations

import os

import typer

from ..admission import DEFAULT_PER_ORG, DEFAULT_PER_PRINCIPAL, DEFAULT_PER_SERVER, DEFAULT_WAIT, Shares
from ..config import DEFAULT_RETENTION_DAYS
from .common import err, kernel


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(host: str = typer.Option("127.0.0.1", help="Interface to bind (loopback by default)."),
              port: int = typer.Option(8080, help="TCP port."),
              rate_limit: float = typer.Option(100.0, "--rate-limit", envvar="HALOMEM_RATE_LIMIT",
                                               help="Requests/s per principal (0: no limit)."),
              burst: int = typer.Option(200, "--burst", help="Requests a principal may send at once."),
              max_body: int = typer.Option(16 * 1024 * 1024, "--max-body", help="Largest request body, bytes."),
              access_log: bool = typer.Option(True, "--access-log/--no-access-log", help="One JSON line per "
                                              "request on stderr (ids, route, status, time; never a token or "
                                              "content)."),
              heads_every: float = typer.Option(60.0, "--audit-heads-every", help="Seconds between audit heads "
                                                "recorded outside the database (0: only at exit)."),
              refusal_window: float = typer.Option(60.0, "--audit-refusal-window", min=0.0, help="Seconds in which "
                                                   "repeated 401/429 refusals share one audit row and a summary."),
              in_flight: int = typer.Option(DEFAULT_PER_PRINCIPAL, "--in-flight", min=0, envvar="HALOMEM_IN_FLIGHT",
                                            help="Requests one principal may have in flight (a large body counts "
                                                 "as several); more wait their turn (0: no limit)."),
              org_in_flight: int = typer.Option(DEFAULT_PER_ORG, "--org-in-flight", min=0,
                                                envvar="HALOMEM_ORG_IN_FLIGHT",
                                                help="The same for all principals of one organisation (0: no limit)."),
              server_in_flight: int = typer.Option(DEFAULT_PER_SERVER, "--server-in-flight", min=0,
                                                   help="The same for every caller together: a reserve of database "
                                                        "connections stays for the server's own work (0: no limit)."),
              share_wait: float = typer.Option(DEFAULT_WAIT, "--share-wait", min=0.0,
                                               help="Seconds a request over its share waits before a 429."),
              query_retention: float = typer.Option(DEFAULT_RETENTION_DAYS, "--query-retention", min=0.0,
                                                    envvar="HALOMEM_QUERY_RETENTION_DAYS",
                                                    help="Days search query texts are kept for replay (0: "
                                                         "forever); the audit chain keeps only their digests."),
              drain: float = typer.Option(10.0, "--drain-seconds", min=0.0, help="On SIGTERM or Ctrl-C: seconds "
                                          "in-flight requests get to finish; unfinished writes then roll back.")
              ) -> None:
        """Serve agents: the HTTP JSON API (/v1, /docs) and MCP (/mcp); every caller needs a token."""
        from ..embed.onnx import THREADS_VARIABLE, serving_threads
        from ..server.app import serve as run_server

        os.environ.setdefault(THREADS_VARIABLE, str(serving_threads()))
        k = kernel()
        err.print(f"halomem: serving http://{host}:{port} (API /v1, docs /docs, MCP /mcp)", markup=False)
        run_server(k, host=host, port=port, rate=rate_limit, burst=burst, max_body=max_body, access_log=access_log,
                   heads_every=heads_every, refusal_window=refusal_window,
                   shares=Shares(per_principal=in_flight, per_org=org_in_flight, per_server=server_in_flight,
                                 wait=share_wait),
                   query_retention_days=query_retention, drain_seconds=drain)
