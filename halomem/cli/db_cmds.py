"""db status | start | stop for the embedded server."""
from __future__ import annotations

import typer

from ..errors import ConfigError, InvalidInputError
from .common import JsonOption, emit_json, err, kernel, local_only, out, settings

app = typer.Typer(no_args_is_help=True, help="The embedded PostgreSQL server.")


def _embedded():  # noqa: ANN202 - halomem.db.embedded, imported on use (remote CLI calls never need it)
    from ..db import embedded

    return embedded


def _embedded_home():  # noqa: ANN202
    local_only("db")
    s = settings()
    if s.database_url:
        raise ConfigError("HALOMEM_DATABASE_URL is set: the server is external and not managed by halomem")
    return s.home


@app.command()
def status(as_json: bool = JsonOption) -> None:
    """The embedded server: whether it runs, its pid and data dir. An external one
    (HALOMEM_DATABASE_URL): its version, the role halomem connects as, and the reader role."""
    local_only("db status")
    if settings().database_url:
        from ..db.inspect import external_status

        facts = external_status(kernel())
        if as_json:
            emit_json(facts)
        else:
            out.print(facts["summary"], markup=False)
            if facts["reader_role"] != "in use":
                err.print(f"halomem: warning: {facts['reader_advice']}", markup=False)
        return
    st = _embedded().status(_embedded_home())
    if as_json:
        emit_json(st)
    else:
        out.print(f"embedded PostgreSQL: {'running pid ' + str(st.pid) if st.running else 'stopped'}"
                  f" data={st.pgdata}" + (" (pinned by db start)" if st.pinned else ""))


@app.command("setup-sql")
def setup_sql(owner: str = typer.Option(None, "--owner", help="The owner role (default: HALOMEM_DATABASE_URL's user, "
                                        "else halomem)."),
              database: str = typer.Option(None, "--database", help="The database (default: the URL's, else halomem).")
              ) -> None:
    """Print the SQL a DBA runs once for a managed PostgreSQL: the owner role and database, the vector
    extension, the SELECT-only reader role (its password derived from the owner's in the URL)."""
    from sqlalchemy.engine import make_url

    from ..db.setup_sql import render

    url = make_url(settings().database_url) if settings().database_url else None
    try:
        text = render(owner or (url.username if url else None) or "halomem",
                      database or (url.database if url else None) or "halomem", url.password if url else None)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    typer.echo(text, nl=False)


@app.command()
def start(as_json: bool = JsonOption) -> None:
    """Start the embedded server and keep it running after this process exits."""
    home = _embedded_home()
    embedded = _embedded()
    embedded.attach(home)
    embedded.pin(home, True)
    st = embedded.status(home)
    emit_json(st) if as_json else out.print(f"embedded PostgreSQL running pid {st.pid} (kept running)")


@app.command()
def stop(force: bool = typer.Option(False, "--force", help="Stop even while other processes use it."),
         as_json: bool = JsonOption) -> None:
    """Stop the embedded server (refused while other halomem processes are attached, unless --force)."""
    home = _embedded_home()
    embedded = _embedded()
    others = embedded.other_users(home)
    if others and not force:
        from ..errors import ConflictError

        raise ConflictError(f"{len(others)} other process(es) use the server: "
                            + "; ".join(f"pid {pid} ({what})" for pid, what in others[:5])
                            + " (wait for them, or pass --force to interrupt them)")
    stopped = embedded.stop(home)
    emit_json({"stopped": stopped}) if as_json else out.print("stopped" if stopped else "not running")
