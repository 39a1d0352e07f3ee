"""Entry point: builds the command tree and maps every failure to one stderr line + exit code."""
from __future__ import annotations

import os
import sys
import traceback

import typer
from typer.exceptions import Abort, Exit, TyperException

from ..errors import EXIT_CODES, DatabaseUnavailableError, HalomemError
from . import (audit_cmds, bench_cmds, conformance_cmds, db_cmds, graph_cmds, index_cmds, memory_cmds, policy_cmds,
               search_cmds, serve_cmds, sidecar_cmds, token_cmds)
from .common import err, setup_logging

app = typer.Typer(
    name="halomem", no_args_is_help=True, invoke_without_command=True, add_completion=False,
    pretty_exceptions_enable=False,
    help="Governed organizational memory for AI agents.\n\nExit codes: "
         + "; ".join(f"{code} {what}" for code, what in sorted(EXIT_CODES.items())),
    context_settings={"help_option_names": ["-h", "--help"]},
)
memory_cmds.register(app)
search_cmds.register(app)
app.add_typer(graph_cmds.entity_app, name="entity")
app.add_typer(graph_cmds.concept_app, name="concept")
app.add_typer(policy_cmds.app, name="policy")
app.add_typer(audit_cmds.app, name="audit")
app.add_typer(db_cmds.app, name="db")
app.add_typer(index_cmds.app, name="index")
app.add_typer(search_cmds.drivers_app, name="drivers")
app.add_typer(sidecar_cmds.app, name="sidecar")
app.add_typer(bench_cmds.app, name="bench")
conformance_cmds.register(app)
serve_cmds.register(app)
app.add_typer(token_cmds.app, name="token")


def _one_line(text: str) -> str:
    first = (text or "").strip().splitlines()
    return first[0] if first else ""


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, help="Print the version and exit.")) -> None:
    """Governed organizational memory for AI agents."""
    if version:
        from .. import __version__

        typer.echo(f"halomem {__version__}")
        raise Exit(0)


def _fail(kind: str, message: str, code: int, as_json: bool) -> int:
    """The one failure output: a line on stderr, and under --json an error object on stdout too."""
    err.print(f"halomem: {kind}: {message}")
    from . import common

    if as_json and not common.json_emitted:  # e.g. a failed conformance report already is the document
        import json

        sys.stdout.write(json.dumps({"error": {"kind": kind, "message": message, "exit_code": code}},
                                    ensure_ascii=False) + "\n")
    return code


def run(argv: list[str] | None = None) -> None:
    setup_logging()
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    debug = os.environ.get("HALOMEM_DEBUG") == "1"
    try:
        rv = typer.main.get_command(app).main(args=args, prog_name="halomem", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except Exit as exc:
        code = exc.exit_code
    except TyperException as exc:
        from typer._click.exceptions import NoArgsIsHelpError, UsageError

        if isinstance(exc, NoArgsIsHelpError):
            exc.show()  # `halomem` or `halomem GROUP` alone: the help is the answer
            code = 0
        elif isinstance(exc, UsageError):
            where = exc.ctx.command_path if exc.ctx else "halomem"
            code = _fail("usage", f"{_one_line(exc.format_message())} (see '{where} -h')", 2, as_json)
        else:
            code = _fail("error", _one_line(str(exc)), exc.exit_code, as_json)
    except (Abort, KeyboardInterrupt):
        err.print("halomem: interrupted")
        code = 130
    except HalomemError as exc:
        if debug:
            traceback.print_exc()
        code = _fail(exc.kind, _one_line(str(exc)), exc.exit_code, as_json)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a bare traceback
        from sqlalchemy.exc import DBAPIError

        if debug:
            traceback.print_exc()
        if isinstance(exc, DBAPIError) and exc.connection_invalidated or type(exc).__name__ == "OperationalError":
            code = _fail(DatabaseUnavailableError.kind, _one_line(str(getattr(exc, "orig", exc))),
                         DatabaseUnavailableError.exit_code, as_json)
        else:
            code = _fail("internal error", f"{type(exc).__name__}: {_one_line(str(exc))}"
                         " (HALOMEM_DEBUG=1 shows the traceback)", 1, as_json)
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    run()
