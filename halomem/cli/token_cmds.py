"""token create | list | revoke: the operator issues agents' credentials (local trust); in remote
mode (HALOMEM_URL), an admin token does the same on its server, for its namespace and below."""
from __future__ import annotations

from typing import Optional

import typer

from .common import JsonOption, NsOption, emit_json, err, kernel, literal, out, remote_operations, store

DEFAULT_EXPIRY = "90d"  # `token create` without --expires (docs/guides/agents.md)

app = typer.Typer(no_args_is_help=True, help="Agent tokens: each binds one principal to one namespace.")


@app.command("create")
def create(ns: Optional[str] = NsOption, name: str = typer.Option(..., "--name", help="Who holds it, e.g. ci-bot."),
           scope: str = typer.Option("read", "--scope", help="Comma-separated: read, write, admin."),
           expires: Optional[str] = typer.Option(None, "--expires", help="A duration (30d, 12h, 2w) or never. Default: "
                                                 f"{DEFAULT_EXPIRY} (remote mode: the admin token's own expiry)."),
           as_json: bool = JsonOption) -> None:
    """Create a token for a namespace. It is printed once and never stored."""
    from ..auth.principal import parse_duration
    from ..ops import for_operator

    server = remote_operations()
    if expires is None and server is None:
        expires = DEFAULT_EXPIRY  # a credential nobody remembers to revoke expires on its own
    expires_in = None if expires is None or expires.strip().lower() == "never" else parse_duration(expires)
    if server is not None:  # the admin token's namespace, or --ns below it
        issued = server.create_token(ns, name, scope, expires_in)
    else:
        issued = for_operator(kernel(), ns).create_token(None, name, scope, expires_in)
    p = issued.principal
    if as_json:
        emit_json({"id": p.id, "token": issued.token, "namespace": p.namespace, "scopes": list(p.scopes),
                   "expires_at": p.expires_at, "name": p.name})
        return
    typer.echo(issued.token)
    err.print(f"halomem: token {p.id} for {p.namespace} ({','.join(p.scopes)})"
              + (f", expires {p.expires_at:%Y-%m-%d %H:%M} UTC" if p.expires_at else "")
              + ": shown once, store it now", markup=False)


@app.command("list")
def list_tokens(ns: Optional[str] = typer.Option(None, "--ns", help="Only this namespace and below."),
                as_json: bool = JsonOption) -> None:
    """Tokens (never their secrets), with their state."""
    from .tables import Column, fitted

    server = remote_operations()
    if server is not None:  # the admin token's namespace and below
        from ..auth.rights import within

        rows = [p for p in server.list_tokens() if ns is None or within(p.namespace, ns)]
    else:
        rows = store("token list").list_tokens(ns)
    if as_json:
        emit_json([p.public() for p in rows])
        return
    columns = [Column("id", whole=True),  # never cut: it is what `revoke` takes
               Column("name"), Column("namespace"), Column("scopes"), Column("created", drop=2),
               Column("expires", drop=1), Column("state", whole=True)]
    out.print(fitted(columns, [[p.id, literal(p.name), p.namespace, ",".join(p.scopes), f"{p.created_at:%Y-%m-%d %H:%M}",
                                f"{p.expires_at:%Y-%m-%d %H:%M}" if p.expires_at else "never", p.status()]
                               for p in rows]))


@app.command("revoke")
def revoke(principal_id: str = typer.Argument(..., help="The token's id (hm_<id>_...)."),
           as_json: bool = JsonOption) -> None:
    """Revoke a token and every token minted from it; the next request that presents one is refused."""
    server = remote_operations()
    p = (server or store("token revoke")).revoke_token(principal_id)
    emit_json(p.public()) if as_json else out.print(f"revoked {p.id} ({p.name}, {p.namespace})",
                                                              markup=False)
