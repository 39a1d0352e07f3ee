"""Bulk embedding at a lower CPU priority, so a search that arrives meanwhile gets the core first.

Embedding a maximal batch (100 memories of 64 KiB: thousands of passages) takes minutes of CPU. On
a shared server that time should go to it only when nobody else wants the core: the work runs in a
fresh thread that raises its own nice value (Linux schedules threads, and a thread may always lower
its priority; it could not raise it back, hence a thread of its own), and the caller waits for it.
Small embeddings (a query, a few memories) run where they are.

A lower priority is not enough on two cores (a niced thread still shares the core's caches, and
the cores may be hyperthreads of one): so bulk work also pauses between small chunks while a server
request of someone else is under way, when the request pipeline hands it a pause (``yielding``:
halomem.admission decides how long; bulk work is never starved, only slowed).
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")
BULK_CHARS = 256 * 1024  # text above this is bulk work
NICENESS = 10
CHUNK_TEXTS = 2  # texts embedded between two pauses (~70 ms of one core for MiniLM passages)

_PAUSE: ContextVar[Callable[[], None] | None] = ContextVar("halomem_bulk_pause", default=None)


@contextmanager
def yielding(pause: Callable[[], None]) -> Iterator[None]:
    """Bulk work done inside calls ``pause()`` between its chunks (the server's fair sharing)."""
    token = _PAUSE.set(pause)
    try:
        yield
    finally:
        _PAUSE.reset(token)


def embed_in_chunks(embed: Callable[[Sequence[str]], list[T]], texts: Sequence[str]) -> list[T]:
    """``embed(texts)``, in chunks with a pause between them when there is a pause to take."""
    pause = _PAUSE.get()
    if pause is None:
        return embed(texts)
    out: list[T] = []
    for start in range(0, len(texts), CHUNK_TEXTS):
        if start:
            pause()
        out.extend(embed(texts[start:start + CHUNK_TEXTS]))
    return out


def run_bulk(work: Callable[[], T], chars: int) -> T:
    """``work()``, at a lower priority when ``chars`` of text make it bulk work."""
    if chars <= BULK_CHARS or not hasattr(os, "setpriority"):
        return work()
    outcome: dict[str, object] = {}

    def body() -> None:
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + NICENESS))
        except OSError:
            pass  # no priority to give up here: the work runs as it would have
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as raised
            outcome["error"] = exc

    import contextvars

    thread = threading.Thread(target=contextvars.copy_context().run, args=(body,), name="bulk-embed", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
