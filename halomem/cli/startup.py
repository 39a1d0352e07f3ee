"""A CLI process starts with the cyclic garbage collector off.

Start-up allocates hundreds of thousands of objects that live as long as the process: modules,
classes, SQLAlchemy's tables and compiled statements, the kernel. The collector walked them again
and again while they were made: 150 collections, one of them full, 60-75 ms of a ~700 ms local
`halomem search` on this machine, with nothing to free. So ``run`` turns it off (``begin``) and
the first of these turns it back on (``end``): the kernel or the remote client is ready, or a
command that boots neither starts its own work. ``end`` first moves every object alive then into
the permanent generation (``gc.freeze``), so later collections, in a server or a bench, do not
walk them either.
"""
from __future__ import annotations

import gc

_paused = False


def begin() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def end() -> None:
    """Start-up is over: freeze what it made and collect as usual from here on (idempotent)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
