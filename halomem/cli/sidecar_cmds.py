"""halomem sidecar serve: the reference ranking sidecar for the mem0 driver."""
from __future__ import annotations

import typer

from ..errors import InvalidInputError
from .common import err

app = typer.Typer(no_args_is_help=True, help="The reference out-of-process ranking sidecar.")


@app.command()
def serve(port: int = typer.Option(8765, help="TCP port (0 picks a free one)."),
          host: str = typer.Option("127.0.0.1", help="Bind address (loopback by default)."),
          delay: float = typer.Option(0.0, help="Artificial per-request delay in seconds (for fault drills).")) -> None:
    """Serve POST /plan and GET /healthz until interrupted."""
    from ..sidecar.server import SidecarServer

    if not 0 <= port <= 65535:
        raise InvalidInputError("port must be 0-65535")
    try:
        server = SidecarServer(host, port, delay=delay)
    except OSError as exc:
        raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    err.print(f"halomem sidecar listening on {server.url} (mode {server.engine.mode})", markup=False)
    try:
        server.serve_forever()
    finally:
        server.server_close()
