"""Server settings for the embedded PostgreSQL, sized to this machine.

initdb's defaults assume a tiny shared host on spinning disks: 128 MB of buffers and random reads
four times dearer than sequential ones. On those the planner prefers sorting a whole namespace over
walking its newest-first index, and a million-row HNSW graph lives in the OS cache instead of the
buffer pool (docs/bench/latency.md). An external server (HALOMEM_DATABASE_URL) is its admin's to
tune; README lists the same settings as advice.
"""
from __future__ import annotations

import os
from pathlib import Path

TUNING_FILE = "halomem.conf"
_INCLUDE = f"include_if_exists = '{TUNING_FILE}'"
_MB = 1024 * 1024


def machine_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4096 * _MB  # unknown: assume a small machine


def settings(memory_bytes: int | None = None) -> dict[str, str]:
    mb = (memory_bytes or machine_memory_bytes()) // _MB
    return {
        "shared_buffers": f"{min(max(mb // 8, 128), 2048)}MB",
        "effective_cache_size": f"{max(mb // 2, 256)}MB",
        "random_page_cost": "1.1",  # reads come from SSD or the page cache, not a seeking disk
    }


def apply(pgdata: Path) -> None:
    """Write the settings beside postgresql.conf and include them (idempotent; read at server start)."""
    body = "".join(f"{key} = '{value}'\n" for key, value in settings().items())
    (pgdata / TUNING_FILE).write_text("# written by halomem on every attach; edits are overwritten\n" + body,
                                      encoding="utf-8")
    conf = pgdata / "postgresql.conf"
    text = conf.read_text(encoding="utf-8")
    if _INCLUDE not in text:
        conf.write_text(text.rstrip("\n") + f"\n\n{_INCLUDE}\n", encoding="utf-8")
