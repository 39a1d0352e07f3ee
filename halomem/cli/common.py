"""Shared CLI plumbing: options, the booted kernel, JSON on stdout, diagnostics on stderr."""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import typer
from ..config import Settings, load_settings


class _LazyConsole:
    """A rich Console made on first use: `--json` runs and the remote client never pay for it."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)


out = _LazyConsole(soft_wrap=True)
err = _LazyConsole(stderr=True, highlight=False, soft_wrap=True)

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


def kernel():  # noqa: ANN201 - returns halomem.kernel.Kernel (imported lazily for fast --help)
    global _kernel
    if _kernel is None:
        from ..kernel import Kernel

        _kernel = Kernel.boot(settings())
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
    sys.stdout.write(json.dumps(data, default=_default, ensure_ascii=False, indent=2) + "\n")


def remote() -> tuple[str, str] | None:
    """(url, token) when HALOMEM_URL is set: data commands then go to that server."""
    url = os.environ.get("HALOMEM_URL", "").strip()
    return (url, os.environ.get("HALOMEM_TOKEN", "").strip()) if url else None


def data(ns: Optional[str]):  # noqa: ANN201 - halomem.ops.Operations or halomem.client.Client
    """The operations a data command calls: the server's (remote mode, the token is the caller)
    or the local kernel's, acting as the operator of ``--ns``. Remote mode never imports the
    database stack."""
    target = remote()
    if target is not None:
        from ..client import Client
        from ..errors import InvalidInputError

        client = Client(*target)
        if ns is not None:
            own = client.whoami()["namespace"]
            if ns != own:
                raise InvalidInputError(f"--ns {ns} conflicts with HALOMEM_TOKEN, whose namespace is {own}"
                                        " (drop --ns/HALOMEM_NS in remote mode)")
        return client
    from ..ops import for_operator

    return for_operator(kernel(), ns)


def ns_required(ns: Optional[str]) -> str:
    from ..kernel import namespace

    return namespace(ns).path
