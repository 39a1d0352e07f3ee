"""Shared CLI plumbing: options, the booted kernel, JSON on stdout, diagnostics on stderr."""
from __future__ import annotations

import dataclasses
import json
import logging
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from ..config import Settings, load_settings

out = Console(soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

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


def ns_required(ns: Optional[str]) -> str:
    from ..kernel import namespace

    return namespace(ns).path
