"""bench ingest: memories/s of bulk ingest against raw COPY of the same rows, in the same run."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Sequence

from . import report
from .harness import ephemeral_kernel
from .synthetic import memory_text

RAW_COPY = "COPY memories (id, namespace, content, embedding, source, provenance) FROM STDIN"


def _raw_copy(kernel, rows: list[tuple]) -> float:  # noqa: ANN001
    started = time.perf_counter()
    with kernel.engine.begin() as conn:
        with conn.connection.driver_connection.cursor().copy(RAW_COPY) as cp:
            for row in rows:
                cp.write_row(row)
    return time.perf_counter() - started


def run_ingest(n: int, embedders: Sequence[str], out_dir: Path, progress: Callable[[str], None] = lambda m: None) -> dict:
    import random

    rng = random.Random(3)
    texts = [memory_text(rng, i) for i in range(n)]
    results = []
    for embedder in embedders:
        with ephemeral_kernel(embedder) as kernel:
            started = time.perf_counter()
            kernel.ingest_texts("bench/ingest", texts, label="bench:ingest")
            ingest_s = time.perf_counter() - started
            # raw COPY of the same rows, vectors precomputed: the floor halomem's path is compared to
            vectors = kernel.embedder.embed(texts)
            rows = [(f"raw_{i}", "bench/raw", t, "[" + ",".join(f"{x:.7g}" for x in v) + "]", None, json.dumps({}))
                    for i, (t, v) in enumerate(zip(texts, vectors))]
            copy_s = _raw_copy(kernel, rows)
        entry = {"embedder": embedder, "rows": n, "ingest_per_s": n / ingest_s, "raw_copy_per_s": n / copy_s,
                 "ratio": (n / ingest_s) / (n / copy_s)}
        results.append(entry)
        progress(f"{embedder}: ingest {entry['ingest_per_s']:.0f}/s vs raw COPY {entry['raw_copy_per_s']:.0f}/s "
                 f"({entry['ratio']:.2f}x)")
    md = "# Bulk ingest throughput\n\n" + report.markdown_table(
        ["embedder", "rows", "halomem ingest /s", "raw COPY /s", "ratio"],
        [[r["embedder"], r["rows"], r["ingest_per_s"], r["raw_copy_per_s"], r["ratio"]] for r in results])
    data = {"results": results}
    report.write(out_dir, "ingest", data, md)
    return {**data, "markdown": md}
