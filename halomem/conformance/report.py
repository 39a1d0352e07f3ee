"""Rendering a conformance report: a rich table like the seed's, or JSON."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .checks import CHECK_IDS, Report


def render(report: Report, console: Console) -> None:
    console.print(f"conformance report - driver '{report.driver}' ({report.origin})", markup=False)
    console.print(f"ran: {report.isolation}", markup=False)
    table = Table(show_edge=False)
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("detail", overflow="fold")
    styles = {"PASS": "green", "FAIL": "bold red", "SKIP": "yellow"}
    for c in report.checks:
        table.add_row(c.id, Text(c.result, style=styles[c.result]), Text(c.detail))
    console.print(table)
    verdict = "PASS" if report.ok else "FAIL"
    console.print(f"result: {verdict} ({report.passed_count}/{len(CHECK_IDS)} checks)", markup=False)
