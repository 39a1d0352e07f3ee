"""index create | drop | list: a large namespace's own partial indexes (HNSW and GIN)."""
from __future__ import annotations

from typing import Optional

import typer

from .common import JsonOption, NsOption, emit_json, ns_required, out, store

app = typer.Typer(no_args_is_help=True, help="Per-namespace indexes for large namespaces.")


@app.command("create")
def index_create(ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
    """Build a namespace's own indexes (worth it from ~50k live rows; writes wait for the build)."""
    path = ns_required(ns)
    created = store("index create").index_namespace(path)
    emit_json({"namespace": path, "created": created}) if as_json else out.print(
        f"{path}: {'indexes built' if created else 'already has its own indexes'}")


@app.command("drop")
def index_drop(ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
    """Drop a namespace's own indexes (its rows stay searchable through the shared ones)."""
    path = ns_required(ns)
    dropped = store("index drop").drop_namespace_index(path)
    emit_json({"namespace": path, "dropped": dropped}) if as_json else out.print(
        f"{path}: {'indexes dropped' if dropped else 'had no indexes of its own'}")


@app.command("list")
def index_list(as_json: bool = JsonOption) -> None:
    """Namespaces that have their own indexes."""
    names = store("index list").namespace_indexes()
    emit_json({"namespaces": names}) if as_json else out.print("\n".join(names) or "none")
