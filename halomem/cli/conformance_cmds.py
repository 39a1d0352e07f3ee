"""halomem conformance NAME|PATH|ENTRY-POINT: exit 0 only on 6/6."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import ConformanceFailed
from .common import JsonOption, emit_json, out


def register(app: typer.Typer) -> None:
    @app.command()
    def conformance(target: str = typer.Argument(..., help="Driver name, path to a .py file, or entry-point name."),
                    source: Optional[Path] = typer.Option(None, "--source", help="Source file to scan (defaults "
                                                          "to the driver's own file)."),
                    latency_budget_ms: Optional[float] = typer.Option(None, "--latency-budget-ms",
                                                                      help="Override the 150 ms p95 bound."),
                    as_json: bool = JsonOption) -> None:
        """Certify a retriever driver with the six checks over a hermetic fixture (exit 10 unless 6/6)."""
        from ..conformance import certify
        from ..conformance.report import render

        from .common import settings

        isolate_all = settings().isolate == "all"  # HALOMEM_ISOLATE=all certifies halomem's own drivers isolated too
        report = certify(target, source, latency_budget_ms=latency_budget_ms, isolate_builtins=isolate_all)
        if as_json:
            emit_json(report.to_dict())
        else:
            render(report, out)
        if not report.ok:
            failed = [c.id for c in report.checks if c.result == "FAIL"]
            skipped = [c.id for c in report.checks if c.result == "SKIP"]
            raise ConformanceFailed(f"driver {report.driver!r} passed {report.passed_count}/6 checks "
                                    f"(failed: {', '.join(failed) or '-'}"
                                    + (f"; not run: {', '.join(skipped)}" if skipped else "") + ")")
