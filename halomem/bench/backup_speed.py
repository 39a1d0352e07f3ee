"""bench backup: `halomem db backup` and `db restore` of a store of N memories (synthetic org notes
with the static embedder's dense vectors, so that building the store takes a minute, not an hour of
transformer time), restored into a second, empty server; the same searches are then asked of both
(identical top-10 lists, and their overlap) and `audit verify --expect-head` is checked on the
restored one."""
from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import report
from .harness import ephemeral_kernel
from .synthetic import memory_text

EMBEDDER = "static"
PROBES = 30  # searches asked of both stores


def run_backup(memories: int, out_dir: Path, progress: Callable[[str], None] = lambda m: None) -> dict:
    from ..audit.heads import parse_head
    from ..backup import backup, restore

    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="halomem-bench-backup-") as tmp, \
            ephemeral_kernel(EMBEDDER) as source, ephemeral_kernel(EMBEDDER) as target:
        started = time.perf_counter()
        for start in range(0, memories, 5000):
            source.ingest_texts("acme/eng", [memory_text(rng, i) for i in range(start, min(memories, start + 5000))])
            progress(f"{min(memories, start + 5000)} memories written")
        build_s = time.perf_counter() - started
        path = Path(tmp) / "store.backup"
        home_a, home_b = Path(tmp) / "a", Path(tmp) / "b"
        home_a.mkdir()
        home_b.mkdir()
        url = lambda k: k.engine.url.render_as_string(hide_password=False)  # noqa: E731
        made = backup(source.engine, url(source), home_a, path)
        progress(f"backup: {made.seconds:.1f} s, {made.bytes / 1e6:.1f} MB")
        back = restore(target.engine, url(target), home_b, path)
        progress(f"restore: {back.seconds:.1f} s")
        target.index.catalog.forget()
        probes = [memory_text(random.Random(1000 + i), i).split(";")[0] for i in range(PROBES)]
        pairs = [([h.id for h in source.search("acme/eng", q, k=10).hits],
                  [h.id for h in target.search("acme/eng", q, k=10).hits]) for q in probes]
        same = sum(a == b for a, b in pairs) / len(pairs)
        overlap = sum(len(set(a) & set(b)) / max(1, len(a)) for a, b in pairs) / len(pairs)
        verified = target.audit_verify(expected=[parse_head(made.head)]).ok if made.head else False
    data = {"memories": memories, "embedder": EMBEDDER, "build_s": build_s, "backup_s": made.seconds,
            "backup_mb": made.bytes / 1e6, "restore_s": back.seconds, "identical_top10": same, "overlap_top10": overlap,
            "verified": verified}
    md = (f"# Backup and restore\n\n{__doc__}\n"
          + report.markdown_table(["memories", "backup s", "backup MB", "restore s", "identical top-10",
                                   "top-10 overlap", "audit verify --expect-head"],
                                  [[memories, made.seconds, data["backup_mb"], back.seconds, same, overlap, verified]])
          + "\nA restore rebuilds the vector indexes from the rows (pg_dump keeps data, not index pages): the HNSW"
          " graph built in one pass is not the one grown insert by insert, so an approximate nearest-neighbour"
          " search may order near-ties differently. The rows, their vectors, the lexicon and the audit chain are"
          " the same (tests/test_backup.py: identical answers on a small store).\n")
    report.write(out_dir, "backup", data, md)
    return {**data, "markdown": md}
