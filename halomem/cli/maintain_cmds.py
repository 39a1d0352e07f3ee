"""maintain: the store's periodic housekeeping, for cron where `halomem serve` does not run it."""
from __future__ import annotations

import typer

from .common import JsonOption, emit_json, out, store


def register(app: typer.Typer) -> None:
    @app.command()
    def maintain(as_json: bool = JsonOption) -> None:
        """Close the validity of memories their namespace's ttl policy has expired (present searches
        already leave them out; history and as-of keep them), one audit row per batch. `halomem serve`
        does this every hour."""
        closed = store("maintain").expire()
        if as_json:
            emit_json({"expired": closed})
        elif closed:
            for name, n in sorted(closed.items()):
                out.print(f"{name}: {n} memories expired (ttl)", markup=False)
        else:
            out.print("nothing expired", markup=False)
