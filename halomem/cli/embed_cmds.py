"""halomem reembed: change the store's embedder on a live store (halomem.write.reembed)."""
from __future__ import annotations

from typing import Any

import typer

from .common import JsonOption, emit_json, err, out, settings, store


def _progress_bar(quiet: bool) -> Any:
    """Rows done of total, rate and ETA on stderr (only on a terminal)."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                               TimeRemainingColumn)
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(f"{task.speed:,.0f} rows/s" if task.speed else "")

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), Rate(),
                    TimeRemainingColumn(), console=err._get(), transient=True, disable=quiet or not err.is_terminal)


def reembed(embedder: str = typer.Option(..., "--embedder", help="The new embedder: onnx (the default), bge "
                                                                   "(bge-small-en-v1.5), static, hash, openai:MODEL "
                                                                   "(with HALOMEM_EMBEDDER_URL), static:DIR."),
            batch: int = typer.Option(256, "--batch", min=1, max=10_000, help="Memories per committed batch."),
            as_json: bool = JsonOption) -> None:
    """Re-embed every memory, passage and concept with another embedder, then swap in one transaction.

    Servers keep searching the old vectors until the swap, then follow it. Interrupted (Ctrl-C,
    SIGKILL), it resumes from its last committed batch when run again with the same --embedder.
    """
    from ..embed import EmbedderOptions, get_embedder

    target = get_embedder(embedder, EmbedderOptions.from_settings(settings()))
    ops = store("reembed", own_embedder=True)
    with _progress_bar(as_json) as bar:
        task = bar.add_task(f"re-embedding with {target.name}", total=None)
        done = ops.reembed(target, batch=batch, on_total=lambda n: bar.update(task, total=n),
                           progress=lambda n: bar.advance(task, n),
                           on_index=lambda: bar.update(task, description="building indexes, then the swap"))
    if as_json:
        emit_json(done.to_dict())
    else:
        out.print(f"re-embedded {done.memories} memories, {done.passages} passages and {done.concepts} concepts: "
                  f"{done.old} -> {done.new}" + (" (resumed)" if done.resumed else ""))


def register(app: typer.Typer) -> None:
    app.command()(reembed)
