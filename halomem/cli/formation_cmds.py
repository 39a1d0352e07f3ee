"""extract and usage: formation's commands (facts from stored conversations by the chat model, and
what its calls cost)."""
from __future__ import annotations

from typing import Any, List, Optional

import typer

from ..errors import EXTRACTION_FAILED_EXIT
from .common import JsonOption, NsOption, data, emit_json, err, out


def show_extraction(extraction: Any, as_json: bool) -> None:
    """The per-session outcome (stdout), each failed session on stderr; exit 19 when any failed
    (its turns are stored: `halomem extract --retry`)."""
    if not as_json:
        facts = sum(len(s.facts) for s in extraction.extracted)
        updated = sum(len(s.superseded) for s in extraction.extracted)
        tokens = sum(s.tokens_in + s.tokens_out for s in extraction.extracted)
        out.print(f"extracted {facts} facts from {len(extraction.extracted)} sessions ({updated} superseding an "
                  f"older fact, {tokens} model tokens)", markup=False)
    for failed in extraction.failed:
        err.print(f"halomem: extraction failed for session {failed.session!r} ({failed.kind}): {failed.reason}; "
                  "its turns are stored (halomem extract --retry)", markup=False)
    if extraction.failed:
        raise typer.Exit(EXTRACTION_FAILED_EXIT)


def register(app: typer.Typer) -> None:
    @app.command()
    def extract(retry: bool = typer.Option(False, "--retry", help="The sessions whose last extraction failed."),
                session: List[str] = typer.Option([], "--session", help="A stored session, by name (repeatable): "
                                                  "extracted again."),
                ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
        """Have the chat model extract facts from stored conversations: the sessions whose extraction
        failed (--retry), or named ones. Exit 19 if any failed again."""
        extraction = data(ns).extract(retry=retry, sessions=session)
        if as_json:
            emit_json(extraction.to_dict())
        show_extraction(extraction, as_json)

    @app.command()
    def usage(days: float = typer.Option(7.0, "--days", help="Days back from now."), ns: Optional[str] = NsOption,
              as_json: bool = JsonOption) -> None:
        """The chat model's calls and tokens per namespace (this one and below) and UTC day."""
        rows = data(ns).usage(days)
        if as_json:
            emit_json({"usage": rows})
            return
        if not rows:
            out.print("no model calls", markup=False)
            return
        from .tables import Column, fitted

        table = fitted([Column("day", whole=True), Column("namespace"), Column("calls", whole=True),
                        Column("failed", whole=True), Column("tokens in", whole=True), Column("tokens out", whole=True)],
                       [[r["day"], r["namespace"], str(r["calls"]), str(r["failed"]), str(r["tokens_in"]),
                         str(r["tokens_out"])] for r in rows])
        out.print(table)
