"""export | import: a namespace as JSONL, to move it to another store (halomem.portable)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import IngestError
from .common import JsonOption, NsOption, emit_json, err, ns_required, out, store


def register(app: typer.Typer) -> None:
    @app.command()
    def export(ns: Optional[str] = NsOption,
               subtree: bool = typer.Option(False, "--subtree", help="Its descendants too."),
               as_of: Optional[str] = typer.Option(None, "--as-of", help="The memories valid at that instant (ISO "
                                                   "8601 or a span back such as 3d); without it every version."),
               out_path: Optional[Path] = typer.Option(None, "--out", help="The file to write (default: stdout)."),
               ) -> None:
        """Export a namespace as JSONL: its memories (every version of their chains, with ids, validity
        times, provenance and keys), entities, concepts and policy; `halomem import` loads it elsewhere."""
        target = ns_required(ns)
        operations = store("export")
        if out_path is None:
            written = operations.export(target, sys.stdout.write, subtree=subtree, as_of=as_of)
        else:
            with open(out_path, "w", encoding="utf-8") as handle:
                written = operations.export(target, handle.write, subtree=subtree, as_of=as_of)
        err.print(f"halomem: exported {written} records of {target}" + (" and below" if subtree else ""),
                  markup=False, highlight=False)

    @app.command("import")
    def import_(path: Path = typer.Argument(..., help="A file `halomem export` wrote."),
                as_json: bool = JsonOption) -> None:
        """Load an export into this store in one transaction (all or nothing): ids, chains and validity
        times kept, texts re-embedded with this store's embedder; a second import writes nothing."""
        try:
            handle = open(path, "rb")
        except OSError as exc:
            raise IngestError(f"cannot read {path}: {exc.strerror or exc}") from None
        with handle:
            counts = store("import").import_export(handle)
        if as_json:
            emit_json(counts)
        else:
            out.print(", ".join(f"{n} {what}" for what, n in counts.items()), markup=False)
