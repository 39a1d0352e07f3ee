"""db status | start | stop for the embedded server; setup-sql for a managed one; backup | restore for both."""
from __future__ import annotations

from pathlib import Path

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


def _steps(as_json: bool):  # noqa: ANN202 - (rich Progress, a callback naming the current object)
    """A spinner on a terminal naming what pg_dump/pg_restore is on, with the time elapsed."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err._get(),
                   transient=True, disable=as_json or not err.is_terminal)
    task = bar.add_task("starting")
    return bar, lambda message: bar.update(task, description=message.replace("[", "(").replace("]", ")"))


def _store_url() -> str:
    """The database this data dir's kernel uses, with its password (for the pg tools' environment)."""
    return kernel().engine.url.render_as_string(hide_password=False)


@app.command()
def backup(path: Path = typer.Argument(..., help="The backup file to write (a tar: the pg_dump and the audit heads)."),
           force: bool = typer.Option(False, "--force", help="Replace the file if it exists."),
           as_json: bool = JsonOption) -> None:
    """A consistent snapshot of the store (embedded or HALOMEM_DATABASE_URL) with PostgreSQL's pg_dump,
    and the audit heads kept outside the database (`audit verify --expect-head` holds after a restore)."""
    from ..backup import backup as make_backup

    local_only("db backup")
    k = kernel()
    bar, step = _steps(as_json)
    with bar:
        done = make_backup(k.engine, _store_url(), settings().home, path.expanduser().absolute(), force=force,
                           progress=step)
    if as_json:
        emit_json(done.to_dict())
    else:
        out.print(f"backed up {done.memories} memories to {done.path} ({done.bytes / 1e6:.1f} MB, {done.seconds:.1f} s);"
                  f" audit head {done.head or '(empty trail)'}", markup=False, soft_wrap=True)


@app.command()
def restore(path: Path = typer.Argument(..., help="A file `halomem db backup` wrote."),
            force: bool = typer.Option(False, "--force", help="Replace a store that is not empty (its audit heads "
                                       "are kept beside as *.before-restore)."),
            as_json: bool = JsonOption) -> None:
    """Load a backup into this data dir's store (embedded, or HALOMEM_DATABASE_URL), which must be empty
    unless --force; then `audit verify --expect-head` with the backup's head holds."""
    from ..backup import read_manifest, restore as load_backup

    local_only("db restore")
    read_manifest(path)  # not a backup: say so before a server is started for nothing
    k = kernel()
    bar, step = _steps(as_json)
    with bar:
        done = load_backup(k.engine, _store_url(), settings().home, path, force=force, progress=step)
    if as_json:
        emit_json(done.to_dict())
    else:
        out.print(f"restored {done.memories} memories from {done.path} in {done.seconds:.1f} s; audit head "
                  f"{done.head or '(empty trail)'}", markup=False, soft_wrap=True)
