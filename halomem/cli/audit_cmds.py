"""audit tail | verify | who-saw | replay | prune-queries."""
from __future__ import annotations

from typing import Optional

import typer

from ..errors import IntegrityError
from .common import JsonOption, emit_json, out, print_text, remote, store

app = typer.Typer(no_args_is_help=True, help="The tamper-evident audit trail.")


@app.command()
def tail(n: int = typer.Option(20, "-n", help="How many rows."),
         action: Optional[str] = typer.Option(None, help="Only this action (search, fallback, remember...)."),
         as_json: bool = JsonOption) -> None:
    """The newest audit rows, oldest first (remote mode: the token's namespace and below; needs admin)."""
    from datetime import datetime

    if remote():
        from .common import data

        rows = data(None).audit_tail(n, action)
    else:
        rows = [r.to_dict() for r in store("audit tail").audit_tail(n, action)]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        out.print(f"{r['seq']}  {datetime.fromisoformat(r['at']):%Y-%m-%d %H:%M:%S}  {r['actor_ns']}  "
                  f"{r['principal'] or 'operator'}  {r['action']}  request {r['request_id']}", markup=False)
        print_text(r["detail"])


@app.command()
def verify(expect_head: Optional[str] = typer.Option(None, "--expect-head", help="SEQ:HASH from an earlier "
                                                     "verify: exit 9 if that row is gone or different."),
           as_json: bool = JsonOption) -> None:
    """Recompute the hash chain and check the heads kept outside the database; exits 9 naming the first
    broken row. Prints the head (SEQ:HASH) to keep elsewhere."""
    from ..audit.heads import parse_head
    from ..errors import InvalidInputError

    try:
        expected = [parse_head(expect_head)] if expect_head else []
    except ValueError as exc:
        raise InvalidInputError(f"--expect-head: {exc}") from None
    result = store("audit verify").audit_verify(expected)
    if as_json:
        emit_json(result)
    elif result.ok:
        shown = f", head {result.head_seq}:{result.head_hash}" if result.head_seq else ""
        out.print(f"audit chain ok: {result.rows} rows verified{shown}")
    if not result.ok:
        raise IntegrityError(f"audit chain broken at row {result.first_bad_seq}: {result.reason}")


@app.command("who-saw")
def who_saw(memory_id: str = typer.Argument(..., help="The memory asked about (any version of its chain)."),
            as_json: bool = JsonOption) -> None:
    """Every search that was returned this memory or another version of its chain: time, principal,
    transport, request id, namespace, rank (remote mode: requests of the token's namespace and below;
    needs admin)."""
    from ..results import WhoSaw

    if remote():
        from .common import data

        found = data(None).who_saw(memory_id)
    else:
        found = store("audit who-saw").who_saw(memory_id)
    if as_json:
        emit_json(found.to_dict() if isinstance(found, WhoSaw) else found)
        return
    if not found.sightings:
        out.print(f"no search returned {memory_id} or another version of its chain", markup=False)
    for s in found.sightings:
        out.print(f"{s.at[:19].replace('T', ' ')}  {s.namespace}  {s.principal or 'operator'}  {s.transport}  "
                  f"request {s.request_id}  rank {s.rank}  {s.memory_id}", markup=False)


@app.command()
def replay(seq: int = typer.Argument(..., min=1, help="The audit seq of a search row (see `audit tail --action "
                                     "search` or `audit who-saw`)."),
           as_json: bool = JsonOption) -> None:
    """Re-run a recorded search as of the instant it was asked, with its driver, k, budget and sources:
    prints `identical`, or the refs missing, added and re-ranked with the reasons halomem can name;
    exit 17 when it differs (remote mode: searches of the token's namespace and below; needs admin)."""
    from ..errors import REPLAY_DIFFERS_EXIT

    if remote():
        from .common import data

        found = data(None).replay(seq)
    else:
        found = store("audit replay").replay(seq)
    if as_json:
        emit_json(found.to_dict())
    else:
        driver = found.recorded_driver + ("" if found.replayed_driver == found.recorded_driver
                                          else f" (replayed with {found.replayed_driver})")
        out.print(f"search {found.seq} in {found.namespace} at {found.at[:19].replace('T', ' ')}, as of "
                  f"{found.as_of[:26].replace('T', ' ')}, driver {driver}, embedder {found.recorded_embedder}",
                  markup=False)
        if found.identical:
            out.print(f"identical: the same {len(found.recorded)} refs in the same order", markup=False)
        else:
            out.print("differs:", markup=False)
            ranks = {r.ref: r.rank for r in found.recorded}
            now = {r.ref: r.rank for r in found.replayed}
            for ref in found.missing:
                out.print(f"  missing   {ref} (rank {ranks[ref]} then)", markup=False)
            for ref in found.added:
                out.print(f"  added     {ref} (rank {now[ref]} now)", markup=False)
            for ref, was, is_now in found.reranked:
                out.print(f"  re-ranked {ref} {was} -> {is_now}", markup=False)
        for reason in found.reasons:
            out.print(f"  why: {reason}", markup=False)
    if not found.identical:
        raise typer.Exit(REPLAY_DIFFERS_EXIT)


@app.command("prune-queries")
def prune_queries(older_than: float = typer.Option(30.0, "--older-than", min=0.0, help="Days to keep search "
                                                   "query texts (their digests stay in the chain)."),
                  as_json: bool = JsonOption) -> None:
    """Remove search query texts past the retention period (`halomem serve` does it hourly, see --query-retention)."""
    removed = store("audit prune-queries").prune_queries(older_than)
    if as_json:
        emit_json({"removed": removed, "older_than_days": older_than})
    else:
        out.print(f"removed {removed} search query texts older than {older_than:g} days", markup=False)
