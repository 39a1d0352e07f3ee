"""Bulk embedding at a lower CPU priority, so a search that arrives meanwhile gets the core first.

Embedding a maximal batch (100 memories of 64 KiB: thousands of passages) takes minutes of CPU. On
a shared server that time should go to it only when nobody else wants the core: the work runs in a
fresh thread that raises its own nice value (Linux schedules threads, and a thread may always lower
its priority; it could not raise it back, hence a thread of its own), and the caller waits for it.
Small embeddings (a query, a few memories) run where they are.
"""
from __future__ import annotations

import os
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
BULK_CHARS = 256 * 1024  # text above this is bulk work
NICENESS = 10


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
