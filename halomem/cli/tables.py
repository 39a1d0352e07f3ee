"""The CLI's one way to print a table for a person: it fits the terminal (80 columns included) by
wrapping cells and, when even that cannot fit, by leaving out the columns marked droppable (least
needed first) and saying which; a name or an id is never cut short with an ellipsis. `--json`
always has every column."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Sequence

from .common import out

FOLDED_MIN = 10  # a wrapped column is never narrower than this
PADDING = 3  # rich's default: a space each side and one rule per column


@dataclass(frozen=True)
class Column:
    header: str
    whole: bool = False  # never wrapped (an id a command takes): as wide as its longest cell
    drop: int = 0  # 0: always shown; otherwise the larger, the sooner it is left out to fit


def _min_width(col: Column, cells: Sequence[str]) -> int:
    if col.whole:
        return max([len(col.header), *(len(c) for c in cells)])
    longest_word = max((len(w) for text in cells for w in text.split()), default=1)
    return max(len(col.header), min(longest_word, FOLDED_MIN))  # a header stays on one line


def fitted(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None = None):  # noqa: ANN201
    """A rich Table of ``rows`` under ``columns`` that fits ``width`` (the terminal's), with a caption
    naming the columns left out, if any."""
    from rich.table import Table

    width = width or out.width
    shown = list(range(len(columns)))

    def need(indexes: list[int]) -> int:
        return sum(_min_width(columns[i], [r[i] for r in rows]) + PADDING for i in indexes) + 1

    while need(shown) > width:
        droppable = [i for i in shown if columns[i].drop]
        if not droppable:
            break
        shown.remove(max(droppable, key=lambda i: (columns[i].drop, i)))
    left_out = [columns[i].header for i in range(len(columns)) if i not in shown]
    note = f"not shown to fit {width} columns: {', '.join(left_out)} (--json has them)"
    table = Table(caption="\n".join(textwrap.wrap(note, width)) if left_out else None, caption_justify="left")
    for i in shown:
        col = columns[i]
        table.add_column(col.header, no_wrap=col.whole, overflow="fold", min_width=_min_width(col, [r[i] for r in rows]))
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    return table
