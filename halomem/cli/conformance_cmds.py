"""halomem conformance NAME|PATH (filled in by the conformance kit)."""
from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
