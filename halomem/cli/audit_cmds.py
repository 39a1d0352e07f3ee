"""audit tail | verify."""
from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from ..errors import IntegrityError
from .common import JsonOption, emit_json, kernel, out

app = typer.Typer(no_args_is_help=True, help="The tamper-evident audit trail.")


@app.command()
def tail(n: int = typer.Option(20, "-n", help="How many rows."),
         action: Optional[str] = typer.Option(None, help="Only this action (search, fallback, remember...)."),
         as_json: bool = JsonOption) -> None:
    """The newest audit rows, oldest first."""
    rows = kernel().audit_tail(n, action)
    if as_json:
        emit_json(rows)
        return
    table = Table()
    for name in ("seq", "at", "actor", "action"):
        table.add_column(name, no_wrap=True)
    table.add_column("detail", ratio=1)
    table.add_column("request", no_wrap=True)
    for r in rows:
        table.add_row(str(r.seq), f"{r.at:%m-%d %H:%M:%S}", r.actor_ns, r.action, r.detail, r.request_id[:8])
    out.print(table)


@app.command()
def verify(as_json: bool = JsonOption) -> None:
    """Recompute the hash chain; exits 9 naming the first broken row."""
    result = kernel().audit_verify()
    if as_json:
        emit_json(result)
    elif result.ok:
        out.print(f"audit chain ok: {result.rows} rows verified")
    if not result.ok:
        raise IntegrityError(f"audit chain broken at row {result.first_bad_seq}: {result.reason}")
