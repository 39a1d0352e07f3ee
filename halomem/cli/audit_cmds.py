"""audit tail | verify."""
from __future__ import annotations

import dataclasses
from typing import Optional

import typer

from ..errors import IntegrityError
from .common import JsonOption, emit_json, kernel, out, remote

app = typer.Typer(no_args_is_help=True, help="The tamper-evident audit trail.")


@app.command()
def tail(n: int = typer.Option(20, "-n", help="How many rows."),
         action: Optional[str] = typer.Option(None, help="Only this action (search, fallback, remember...)."),
         as_json: bool = JsonOption) -> None:
    """The newest audit rows, oldest first (remote mode: the token's namespace and below; needs admin)."""
    from datetime import datetime

    from rich.table import Table
    from rich.text import Text

    if remote():
        from .common import data

        rows = data(None).audit_tail(n, action)
        for r in rows:
            r["at"] = datetime.fromisoformat(r["at"])
    else:
        rows = [dataclasses.asdict(r) for r in kernel().audit_tail(n, action)]
    if as_json:
        emit_json(rows)
        return
    table = Table()
    for name in ("seq", "at", "actor", "principal", "action"):
        table.add_column(name, no_wrap=True)
    table.add_column("detail", ratio=1)
    table.add_column("request", no_wrap=True)
    for r in rows:
        table.add_row(str(r["seq"]), f"{r['at']:%m-%d %H:%M:%S}", Text(r["actor_ns"]), r["principal"] or "operator",
                      Text(r["action"]), Text(r["detail"]), r["request_id"][:8])
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
