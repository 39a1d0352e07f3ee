"""search and drivers list."""
from __future__ import annotations

from typing import List, Optional

import typer
from .common import JsonOption, NsOption, data, emit_json, err, kernel, literal, out, print_text, remote, store

drivers_app = typer.Typer(no_args_is_help=True, help="Mounted retriever drivers.")


def register(app: typer.Typer) -> None:
    @app.command()
    def search(query: str = typer.Argument(..., help="What to look for."), ns: Optional[str] = NsOption,
               k: int = typer.Option(10, "--k", help="How many hits at most."),
               budget: int = typer.Option(2000, "--budget", help="Token budget for all hits together."),
               source: List[str] = typer.Option([], "--source", help="Only these sources (repeatable)."),
               driver: Optional[str] = typer.Option(None, "--driver", help="Override the namespace policy."),
               as_of: Optional[str] = typer.Option(None, "--as-of", help=(
                   "The store as it stood then: ISO 8601 (naive is UTC) or a span back (90s, 30m, 2h, 3d, 1w);"
                   " memories only, concepts keep no history.")),
               as_json: bool = JsonOption) -> None:
        """Search what the caller's namespace may see, ranked by the policy's driver."""
        ops = data(ns, embeds=[query])
        result = ops.search(query, k=k, token_budget=budget, sources=source or None, driver=driver, as_of=as_of)
        if remote() is None:  # local: the operator named the namespace, and may have mistyped it
            _whose_rows(result)
        if as_json:
            emit_json(result.to_dict())
            return
        driver = result.driver + (f" (fallback from {result.requested_driver})" if result.fallback else "")
        when = f", as of {result.as_of} (memories only)" if result.as_of else ""
        out.print(f"{len(result.hits)} hits, {result.tokens} tokens, driver {driver}, {result.elapsed_ms:.1f} ms{when}")
        for h in result.hits:
            out.print(f"{h.rank}. {h.score:.3f} {h.tier} {h.ref}  {h.namespace or '-'}"
                      + (f"  source: {h.source}" if h.source else ""))
            print_text(h.content)


    def _whose_rows(result) -> None:  # noqa: ANN001 - a SearchResult
        """A note on stderr when the namespace searched holds no memories of its own: which namespaces
        the hits come from (those it inherits), or that nothing matched there either."""
        operator = store("search")
        if operator.own_memories(result.namespace):
            return
        twins = operator.case_twins(result.namespace)
        if twins:
            err.print(f"halomem: warning: {result.namespace} holds nothing, but {', '.join(twins)} (differing "
                      "only in case) does: namespaces are case-sensitive", markup=False)
        elif result.hits:
            origins = ", ".join(dict.fromkeys(h.namespace or "-" for h in result.hits))
            err.print(f"halomem: note: {result.namespace} holds no memories of its own; these hits are what it "
                      f"inherits, from {origins}", markup=False)
        else:
            err.print(f"halomem: note: {result.namespace} holds no memories of its own, and nothing it inherits "
                      "matched", markup=False)

    @app.command()
    def namespaces(ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
        """--ns and every namespace below it that holds memories, with live memory counts (remote
        mode: the token's namespace and below; needs admin)."""
        tree = data(ns).namespaces()
        if as_json:
            emit_json(tree)
            return
        root_depth = tree["root"].count("/")
        for row in tree["namespaces"]:
            indent = "  " * (row["namespace"].count("/") - root_depth)
            out.print(f"{indent}{row['namespace']}  {row['memories']}", markup=False, highlight=False)

    @app.command()
    def feedback(request_id: str = typer.Argument(..., help="The request_id of the search (search --json)."),
                 ref: str = typer.Argument(..., help="The hit's id (or its ref, for a concept)."),
                 verdict: str = typer.Argument(..., help="helpful, not-helpful or wrong."),
                 note: Optional[str] = typer.Option(None, "--note", help="Why, in a sentence (cleared if the memory "
                                                    "is erased)."),
                 ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
        """A verdict on a hit a search returned (locally: a search made in --ns or below)."""
        given = data(ns).feedback(request_id, ref, verdict, note)
        if as_json:
            emit_json(given.to_dict())
        else:
            out.print(f"recorded {given.verdict} for {given.ref} (request {given.request_id})", markup=False)


@drivers_app.command("list")
def drivers_list(as_json: bool = JsonOption) -> None:
    """Drivers mounted at boot and their capabilities."""
    from .tables import Column, fitted

    k = kernel()
    rows = []
    for name in k.registry.names():
        driver = k.registry.get(name)
        caps = driver.capabilities()
        cartridge = getattr(driver, "cartridge", None)  # a sandboxed cartridge: say what it is, not its proxy
        origin = "in-process"
        if cartridge is not None:
            origin = f"{cartridge.kind.replace('_', ' ')} {cartridge.value}" + (
                f" ({cartridge.source_path})" if cartridge.source_path else "") + ", sandboxed"
        klass = f"{cartridge.kind}:{cartridge.value}" if cartridge else f"{type(driver).__module__}.{type(driver).__name__}"
        rows.append({"name": name, "graph": caps.graph, "streaming": caps.streaming, "class": klass,
                     "origin": origin})
    if as_json:
        emit_json(rows)
        return
    out.print(fitted([Column("driver", whole=True), Column("graph", drop=2), Column("streaming", drop=1),
                      Column("origin")],
                     [[r["name"], str(r["graph"]), str(r["streaming"]), literal(r["origin"])] for r in rows]))
