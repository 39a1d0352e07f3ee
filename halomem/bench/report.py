"""Bench output: a markdown table and JSON under a results folder, plus PNG plots."""
from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence


def machine() -> dict[str, Any]:
    import os

    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write(out_dir: Path, name: str, data: dict[str, Any], markdown: str) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{name}.json", out_dir / f"{name}.md"
    json_path.write_text(json.dumps({"machine": machine(), **data}, indent=2), encoding="utf-8")
    md_path.write_text(markdown + "\n", encoding="utf-8")
    return json_path, md_path


def _pyplot():  # noqa: ANN202 - matplotlib.pyplot, or None when it is not installed
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def bar_plot(path: Path, title: str, groups: dict[str, dict[str, float]], ylabel: str) -> Path | None:
    """groups: series label -> {x label -> value}. Skipped (None) without matplotlib."""
    plt = _pyplot()
    if plt is None:
        return None
    labels = sorted({x for values in groups.values() for x in values})
    fig, ax = plt.subplots(figsize=(max(8, len(labels) * 2.2), 4.5))
    width = 0.8 / max(1, len(groups))
    for i, (series, values) in enumerate(sorted(groups.items())):
        ax.bar([j + i * width for j in range(len(labels))], [values.get(x, 0) for x in labels], width, label=series)
    ax.set_xticks([j + width * (len(groups) - 1) / 2 for j in range(len(labels))], labels, rotation=20)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def line_plot(path: Path, title: str, series: dict[str, dict[int, float]], xlabel: str, ylabel: str) -> Path | None:
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, points in sorted(series.items()):
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
