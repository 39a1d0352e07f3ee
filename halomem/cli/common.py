"""Shared CLI plumbing: options, the booted kernel, JSON on stdout, diagnostics on stderr."""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Optional, Sequence

import typer

from ..config import Settings, load_settings
from . import startup


# Stored text is data: control characters (ANSI/OSC escapes, NUL, DEL, C1) and bidi overrides are
# shown as visible escapes, never sent to the terminal; markup is never interpreted.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def neutralize(text: object) -> str:
    """``text`` with every control or bidi-override character replaced by its visible escape."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def literal(text: object, style: str = "") -> Any:
    """A rich Text showing ``text`` exactly (no markup), control characters neutralized."""
    from rich.text import Text

    return Text(neutralize(text), style=style)


SHOWN_TEXT_CHARS = 800


def print_text(text: str, indent: int = 3) -> None:
    """A stored text under its header line, wrapped to the terminal (80 columns when piped)."""
    import textwrap

    shown = text if len(text) <= SHOWN_TEXT_CHARS else text[:SHOWN_TEXT_CHARS] + f"... (+{len(text) - SHOWN_TEXT_CHARS}" \
        " characters; --json has all)"
    width = max(20, out.size.width - indent)
    for paragraph in neutralize(shown).split("\n"):
        for line in textwrap.wrap(paragraph, width, break_long_words=True, replace_whitespace=False) or [""]:
            out.print(" " * indent + line, soft_wrap=True)


class _LazyConsole:
    """The one way the CLI prints for humans: a rich Console made on first use (`--json` runs and
    the remote client never pay for it) with markup off, and every string neutralized."""

    def __init__(self, **options: Any) -> None:
        self._options = {"markup": False, "highlight": False, "emoji": False, **options}
        self._console = None

    def _get(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def print(self, *objects: Any, **kwargs: Any) -> None:
        kwargs.pop("markup", None)
        self._get().print(*(neutralize(o) if isinstance(o, str) else o for o in objects), markup=False, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


out = _LazyConsole(soft_wrap=True)
err = _LazyConsole(stderr=True, soft_wrap=True)

NsOption = typer.Option(None, "--ns", envvar="HALOMEM_NS", help="Caller namespace, e.g. acme/eng.")
JsonOption = typer.Option(False, "--json", help="Machine-readable JSON on stdout.")


class _StderrWarnings(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        err.print(f"halomem: warning: {record.getMessage()}", markup=False)


def setup_logging() -> None:
    logger = logging.getLogger("halomem")
    if not any(isinstance(h, _StderrWarnings) for h in logger.handlers):
        logger.addHandler(_StderrWarnings(level=logging.WARNING))
        logger.propagate = False


_kernel = None


def settings(**flags: Any) -> Settings:
    return load_settings(**flags)


def kernel(own_embedder: bool = False):  # noqa: ANN201 - returns halomem.kernel.Kernel (lazy for fast --help)
    """The local kernel; ``own_embedder``: on the store's own embedder whatever HALOMEM_EMBEDDER says
    (reembed: that setting may already name the new one)."""
    global _kernel
    if _kernel is None:
        from ..kernel import Kernel

        import atexit

        try:
            _kernel = Kernel.boot(dataclasses.replace(settings(), embedder=None) if own_embedder else settings())
        finally:
            startup.end()
        atexit.register(_kernel.close)  # records the audit head outside the database, frees workers
    return _kernel


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def emit_json(data: Any) -> None:
    global json_emitted
    sys.stdout.write(json.dumps(data, default=_default, ensure_ascii=False, indent=2) + "\n")
    json_emitted = True


json_emitted = False  # a command's JSON document went out: a later failure adds no second one


def remote() -> tuple[str, str] | None:
    """(url, token) when HALOMEM_URL is set: data commands then go to that server."""
    url = os.environ.get("HALOMEM_URL", "").strip()
    return (url, os.environ.get("HALOMEM_TOKEN", "").strip()) if url else None


def remote_operations():  # noqa: ANN201 - halomem.remote.RemoteOperations or None
    """HALOMEM_URL's server as the token's principal (remote mode), or None for the local store."""
    target = remote()
    if target is None:
        return None
    from ..remote import RemoteOperations

    client = RemoteOperations.for_cli(*target)
    startup.end()
    return client


def data(ns: Optional[str], embeds: Sequence[str] = ()):  # noqa: ANN201 - halomem.ops.Operations or halomem.remote.RemoteOperations
    """The operations a data command calls: the server's (remote mode, the token is the caller)
    or the local kernel's, acting as the operator of ``--ns``. Remote mode never imports the
    database stack. ``embeds``: the texts the command will embed, started in a child while the
    kernel boots (embed.prefetch)."""
    client = remote_operations()
    if client is not None:
        from ..errors import InvalidInputError

        if ns is not None:
            own = client.whoami()["namespace"]
            if ns != own:
                raise InvalidInputError(f"--ns {ns} conflicts with HALOMEM_TOKEN, whose namespace is {own}"
                                        " (drop --ns/HALOMEM_NS in remote mode)")
        return client
    early = None
    if _kernel is None and embeds:  # forked before the database stack is imported: that import is
        from ..embed import prefetch  # most of what the child's work can overlap

        early = prefetch.start(settings().embedder, embeds)
    from ..ops import for_operator

    if early is not None:
        booted = kernel()
        booted.embedders.current = prefetch.PrefetchedEmbedder(booted.embedders.current, early)
    return for_operator(kernel(), ns or settings().ns)  # --ns / HALOMEM_NS, else config.toml's ns


def local_only(command: str, server_route: str | None = None) -> None:
    """Operator commands act on this machine's data dir. With HALOMEM_URL set, the other commands go
    to that server: running these silently against the local store would mislead, so they refuse."""
    if remote() is None:
        return
    from ..errors import InvalidInputError

    instead = f" (on the server: {server_route} with an admin token)" if server_route else ""
    raise InvalidInputError(f"`halomem {command}` acts on the local data dir, not on HALOMEM_URL's server: "
                            f"unset HALOMEM_URL to run it here{instead}")


def store(command: str, server_route: str | None = None, *, own_embedder: bool = False):  # noqa: ANN201
    """The local operator's store-wide operations (halomem.ops.StoreOperations; local trust), refused
    in remote mode."""
    local_only(command, server_route)
    from ..ops import for_store

    return for_store(kernel(own_embedder))


def ns_required(ns: Optional[str]) -> str:
    from ..limits import namespace

    return namespace(ns).path
