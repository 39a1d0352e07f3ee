"""Entry point: builds the command tree and maps every failure to one stderr line + exit code."""
from __future__ import annotations

import os
import sys
import traceback

import typer
from typer.exceptions import Abort, Exit, TyperException

from ..errors import EXIT_CODES, DatabaseUnavailableError, HalomemError
from . import startup
from .common import err, setup_logging

# Every top-level command: (its module, the Typer group it is, or None for commands the module's
# register() adds to the root), registered in this order. A call builds only the part of the
# tree it names (`halomem search` imports and converts one module, not fifteen): the help, an
# unknown name or no name build the whole tree.
COMMANDS: dict[str, tuple[str, str | None]] = {
    "init": ("memory_cmds", None), "remember": ("memory_cmds", None), "supersede": ("memory_cmds", None),
    "erase": ("memory_cmds", None), "history": ("memory_cmds", None), "ingest": ("memory_cmds", None),
    "search": ("search_cmds", None), "feedback": ("search_cmds", None), "namespaces": ("search_cmds", None), "eval": ("eval_cmds", None),
    "entity": ("graph_cmds", "entity_app"), "concept": ("graph_cmds", "concept_app"),
    "policy": ("policy_cmds", "app"), "audit": ("audit_cmds", "app"), "db": ("db_cmds", "app"),
    "index": ("index_cmds", "app"), "drivers": ("search_cmds", "drivers_app"),
    "sidecar": ("sidecar_cmds", "app"), "bench": ("bench_cmds", "app"),
    "conformance": ("conformance_cmds", None), "serve": ("serve_cmds", None), "mcp": ("mcp_cmds", "app"),
    "token": ("token_cmds", "app"), "reembed": ("embed_cmds", None), "maintain": ("maintain_cmds", None),
    "export": ("portable_cmds", None), "import": ("portable_cmds", None),
    "extract": ("formation_cmds", None), "usage": ("formation_cmds", None),
}
# Commands whose first act is booting the kernel or the remote client (common.kernel / common.data),
# which end start-up themselves (cli/startup.py); any other command ends it before it runs.
BOOT_FIRST = frozenset({"init", "remember", "supersede", "erase", "history", "ingest", "search", "feedback", "eval", "namespaces",
                        "entity",
                        "concept", "policy", "audit", "index", "drivers", "token", "serve", "mcp", "maintain", "export", "import",
                        "extract", "usage"})


def _root(version: bool = typer.Option(False, "--version", is_eager=True, help="Print the version and exit.")) -> None:
    """Governed organizational memory for AI agents."""
    if version:
        from .. import __version__

        typer.echo(f"halomem {__version__}")
        raise Exit(0)


def build_app(only: str | None = None) -> typer.Typer:
    """The command tree: all of it, or only the top-level command ``only`` (with the root's options)."""
    from importlib import import_module

    app = typer.Typer(
        name="halomem", no_args_is_help=True, invoke_without_command=True, add_completion=False,
        pretty_exceptions_enable=False,
        help="Governed organizational memory for AI agents.\n\nExit codes: "
             + "; ".join(f"{code} {what}" for code, what in sorted(EXIT_CODES.items())),
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    registered: set[str] = set()
    for name, (module_name, group) in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = import_module(f"{__package__}.{module_name}")
        if group is not None:
            app.add_typer(getattr(module, group), name=name)
        elif module_name not in registered:
            module.register(app)  # adds all its root commands; the ones not asked for are harmless
            registered.add(module_name)
    return app


def command_named(args: list[str]) -> str | None:
    """The top-level command an argument list names, if it is one we know (None: build all; "" for
    `--version`, which needs no command)."""
    for arg in args:
        if arg.startswith("-"):
            if arg in ("-h", "--help"):
                return None
            continue
        return arg if arg in COMMANDS else None
    return "" if "--version" in args else None


def _one_line(text: str) -> str:
    first = (text or "").strip().splitlines()
    return first[0].encode("utf-8", "backslashreplace").decode("utf-8") if first else ""


def _fail(kind: str, message: str, code: int, as_json: bool) -> int:
    """The one failure output: a line on stderr, and under --json an error object on stdout too."""
    err.print(f"halomem: {kind}: {message}")
    from . import common

    if as_json and not common.json_emitted:  # e.g. a failed conformance report already is the document
        import json

        sys.stdout.write(json.dumps({"error": {"kind": kind, "message": message, "exit_code": code}},
                                    ensure_ascii=False) + "\n")
    return code


class Terminated(BaseException):
    """SIGTERM, turned into an exception so a stop runs the same shutdown as Ctrl-C: atexit closes
    the kernel (audit head recorded, connections released, the embedded server stopped when it was
    started for this process). Without it SIGTERM kills the process outright, and `serve` would
    lose all of that: uvicorn drains in-flight requests, then re-raises the signal it caught."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def run(argv: list[str] | None = None) -> None:
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    startup.begin()
    setup_logging()
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    debug = os.environ.get("HALOMEM_DEBUG") == "1"
    try:
        named = command_named(args)
        command = typer.main.get_command(build_app(named))
        if named not in BOOT_FIRST:
            startup.end()
        rv = command.main(args=args, prog_name="halomem", standalone_mode=False)
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
    except Terminated:
        err.print("halomem: stopped (SIGTERM)")
        code = 143
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
    startup.end()
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    run()
