"""entity add/list and concept put/search/materialize."""
from __future__ import annotations

from typing import List, Optional

import typer
from .common import JsonOption, NsOption, data, emit_json, out, literal

entity_app = typer.Typer(no_args_is_help=True, help="The entity registry (aliases, mentions).")
concept_app = typer.Typer(no_args_is_help=True, help="L3 concepts (the cold tier).")


@entity_app.command("add")
def entity_add(name: str = typer.Argument(..., help="The entity's name, as memories write it."),
               alias: List[str] = typer.Option([], "--alias", "-a", help="Another name it goes by (repeatable)."),
               ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
    """Register an entity (or add aliases); links mentions in the namespace and its descendants."""
    added = data(ns).add_entity(name, alias)
    if as_json:
        emit_json(added.to_dict())
    else:
        out.print(f"entity {added.id} {name!r}: {added.linked} mention(s) linked", markup=False)


@entity_app.command("list")
def entity_list(ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
    """Entities visible from the namespace."""
    from .tables import Column, fitted

    rows = data(ns).entities()
    if as_json:
        emit_json(rows)
        return
    out.print(fitted([Column("id", whole=True), Column("name"), Column("aliases")],
                     [[str(r["id"]), literal(r["name"]), literal(", ".join(r["aliases"]))] for r in rows]))


@concept_app.command("put")
def concept_put(path: str = typer.Argument(..., help="The concept's path, e.g. eng/deploys."),
                text: str = typer.Argument(..., help="What the concept says (replaces its text if it exists)."),
                ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
    """Create or replace an L3 concept."""
    stored = data(ns).put_concept(path, text)
    if as_json:
        emit_json(stored.to_dict())
    else:
        out.print(f"concept {stored.namespace}:{path} stored")


@concept_app.command("search")
def concept_search(query: str = typer.Argument(..., help="What to look for."), ns: Optional[str] = NsOption,
                   k: int = typer.Option(10, "--k", help="How many concepts at most."),
                   as_json: bool = JsonOption) -> None:
    """Search L3 concepts visible from the namespace."""
    from .tables import Column, fitted

    hits = data(ns).concepts(query, k)
    rows = [{"ref": h.ref, "namespace": h.ref.rpartition(":")[0], "path": h.ref.rpartition(":")[2],
             "score": h.score, "content": h.content, "token_estimate": h.token_estimate} for h in hits]
    if as_json:
        emit_json(rows)
        return
    out.print(fitted([Column("score", whole=True), Column("namespace"), Column("path"), Column("content")],
                     [[f"{r['score']:.3f}", literal(r["namespace"]), literal(r["path"]), literal(r["content"][:200])]
                      for r in rows]))


@concept_app.command("materialize")
def concept_materialize(path: str = typer.Argument(..., help="The path of a concept the namespace can see."),
                        ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
    """Copy a concept into L2 as a memory of the namespace."""
    made = data(ns).materialize_concept(path)
    emit_json({**made.to_dict(), "concept": path}) if as_json \
        else out.print(made.id, markup=False)
