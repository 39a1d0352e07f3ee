"""db status | start | stop for the embedded server."""
from __future__ import annotations

import typer

from ..errors import ConfigError
from .common import JsonOption, emit_json, local_only, out, settings

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
    """Whether the embedded server runs, its pid, socket dir and attached processes."""
    st = _embedded().status(_embedded_home())
    if as_json:
        emit_json(st)
    else:
        out.print(f"embedded PostgreSQL: {'running pid ' + str(st.pid) if st.running else 'stopped'}"
                  f" data={st.pgdata}" + (" (pinned by db start)" if st.pinned else ""))


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
