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
    cells = [str(c) for c in cells]  # a rich Text (stored text shown literally) measures as its plain text
    if col.whole:
        return max([len(col.header), *(len(c) for c in cells)])
    longest_word = max((len(w) for text in cells for w in text.split()), default=1)
    return max(len(col.header), min(longest_word, FOLDED_MIN))  # a header stays on one line


def _natural_width(col: Column, cells: Sequence[str]) -> int:
    return max([len(col.header), *(len(line) for c in cells for line in str(c).splitlines())])


def _widths(columns: Sequence[Column], cells: Sequence[Sequence[str]], width: int) -> list[int]:
    """Each column's width: its natural width when all fit; otherwise every column starts at its
    minimum and the room left goes, a character at a time, to the wrapped columns still short of
    their natural width (so rich never has to guess, and a line never passes ``width``)."""
    least = [_min_width(c, cs) for c, cs in zip(columns, cells)]
    most = [max(lo, _natural_width(c, cs)) for lo, c, cs in zip(least, columns, cells)]
    room = width - 1 - len(columns) * PADDING
    if sum(most) <= room:
        return most
    widths = list(least)
    spare = room - sum(widths)
    while spare > 0:
        short = [i for i, c in enumerate(columns) if not c.whole and widths[i] < most[i]]
        if not short:
            break
        for i in short[:spare]:
            widths[i] += 1
        spare -= min(len(short), spare)
    return widths


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
    kept = [columns[i] for i in shown]
    widths = _widths(kept, [[r[i] for r in rows] for i in shown], width)
    total = sum(widths) + len(widths) * PADDING + 1
    # Wider than the terminal only when the columns that are always shown cannot fit even wrapped:
    # then the terminal wraps the line rather than rich cutting an id short.
    table = Table(caption="\n".join(textwrap.wrap(note, width)) if left_out else None, caption_justify="left",
                  width=total if total > width else None)
    for col, w in zip(kept, widths):
        table.add_column(col.header, no_wrap=col.whole, overflow="fold", width=w, min_width=w)
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    return table
