"""search and drivers list."""
from __future__ import annotations

from typing import List, Optional

import typer
from .common import JsonOption, NsOption, data, emit_json, kernel, out, print_text

drivers_app = typer.Typer(no_args_is_help=True, help="Mounted retriever drivers.")


def register(app: typer.Typer) -> None:
    @app.command()
    def search(query: str = typer.Argument(..., help="What to look for."), ns: Optional[str] = NsOption,
               k: int = typer.Option(10, "--k", help="How many hits at most."),
               budget: int = typer.Option(2000, "--budget", help="Token budget for all hits together."),
               source: List[str] = typer.Option([], "--source", help="Only these sources (repeatable)."),
               driver: Optional[str] = typer.Option(None, "--driver", help="Override the namespace policy."),
               as_json: bool = JsonOption) -> None:
        """Search what the caller's namespace may see, ranked by the policy's driver."""
        result = data(ns).search(query, k=k, token_budget=budget, sources=source or None, driver=driver)
        if as_json:
            emit_json(result.to_dict())
            return
        driver = result.driver + (f" (fallback from {result.requested_driver})" if result.fallback else "")
        out.print(f"{len(result.hits)} hits, {result.tokens} tokens, driver {driver}, {result.elapsed_ms:.1f} ms")
        for h in result.hits:
            out.print(f"{h.rank}. {h.score:.3f} {h.tier} {h.ref}  {h.namespace or '-'}"
                      + (f"  source: {h.source}" if h.source else ""))
            print_text(h.content)


@drivers_app.command("list")
def drivers_list(as_json: bool = JsonOption) -> None:
    """Drivers mounted at boot and their capabilities."""
    from rich.table import Table

    k = kernel()
    rows = []
    for name in k.registry.names():
        caps = k.registry.get(name).capabilities()
        rows.append({"name": name, "graph": caps.graph, "streaming": caps.streaming,
                     "class": type(k.registry.get(name)).__module__ + "." + type(k.registry.get(name)).__name__})
    if as_json:
        emit_json(rows)
        return
    table = Table("driver", "graph", "streaming", "class")
    for r in rows:
        table.add_row(r["name"], str(r["graph"]), str(r["streaming"]), r["class"])
    out.print(table)
