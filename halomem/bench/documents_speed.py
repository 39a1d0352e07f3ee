"""bench documents: a folder of Markdown files ingested the way `halomem ingest DIR` does, against the
embedder's own throughput on the same texts, and the re-run of the unchanged folder.

The files (seeded) are ~1,500-character Markdown documents: a title, two or three sections of
paragraphs from the synthetic org corpus. Three legs, on one ephemeral embedded server with the
default embedder (or --embedder), in rounds (each ingest into a namespace of its own; this VM's
speed drifts, so the legs alternate and the medians are reported):

- embedder alone: ``embed_memories`` on the documents' texts with their structure, as the write path
  embeds them (passages included), nothing else;
- first ingest: walking the folder, parsing, hashing, consolidation, the writes and their audit
  rows (intake.documents through Kernel.ingest_documents);
- re-run: the same folder again, unchanged: read and hashed, nothing parsed or embedded.

Goals (issue 47): the first ingest >= 0.9x the embedder's throughput (parsing and bookkeeping
<= 10%); the re-run <= 5% of the first run's time.
"""
from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import report
from .harness import ephemeral_kernel
from .synthetic import memory_text

TARGET_CHARS = 1500


def write_folder(folder: Path, count: int, seed: int = 17) -> list[Path]:
    """``count`` Markdown files of about TARGET_CHARS characters under ``folder`` (in subfolders of 100)."""
    rng = random.Random(seed)
    paths = []
    n = 0
    for i in range(count):
        sections = []
        size = 0
        while size < TARGET_CHARS - 200:
            paragraph = " ".join(memory_text(rng, n + j) for j in range(3))
            n += 3
            heading = f"## {rng.choice(['Context', 'Decision', 'Follow-up', 'Numbers', 'Owners'])} {len(sections) + 1}"
            sections.append(f"{heading}\n\n{paragraph}\n")
            size += len(paragraph) + len(heading)
        path = folder / f"part-{i // 100:03d}" / f"note-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\n" + "\n".join(sections), encoding="utf-8")
        paths.append(path)
    return paths


def run_documents(count: int, embedder: str, out_dir: Path, progress: Callable[[str], None] = lambda m: None,
                  rounds: int = 3) -> dict:
    from ..embed.passages import embed_memories
    from ..intake.documents import rows_of
    from ..intake.files import collect
    from ..intake.formats import read

    with tempfile.TemporaryDirectory(prefix="halomem-bench-docs-") as tmp:
        folder = Path(tmp) / "handbook"
        write_folder(folder, count)
        roots, files = collect([folder])
        rows = [row for f in files for row in rows_of(f, read(f.data, f.path), "x")]
        chars = sum(len(r.content) for r in rows)
        progress(f"{count} files, {len(rows)} memories, {chars / len(rows):.0f} characters each on average")
        with ephemeral_kernel(None if embedder == "default" else embedder) as kernel:
            name = kernel.embedder.name
            embed_memories(kernel.embedder, [r.content for r in rows[:8]])  # load the session, warm it
            legs: dict[str, list[float]] = {"embed": [], "first": [], "rerun": []}
            for n in range(rounds):
                started = time.perf_counter()
                embed_memories(kernel.embedder, [r.content for r in rows], [r.blocks for r in rows])
                legs["embed"].append(time.perf_counter() - started)
                started = time.perf_counter()
                first = kernel.ingest_documents(f"bench/docs{n}", roots, files)
                legs["first"].append(time.perf_counter() - started)
                started = time.perf_counter()
                _, again_files = collect([folder])  # the re-run reads the folder again, as the CLI does
                again = kernel.ingest_documents(f"bench/docs{n}", roots, again_files)
                legs["rerun"].append(time.perf_counter() - started)
                progress(f"round {n + 1}: embedder alone {len(rows) / legs['embed'][-1]:.1f} docs/s, ingest "
                         f"{len(files) / legs['first'][-1]:.1f} files/s ({len(first.written)} written), re-run "
                         f"{legs['rerun'][-1]:.2f} s ({len(again.written)} written)")
    embed_s, first_s, rerun_s = (statistics.median(legs[k]) for k in ("embed", "first", "rerun"))
    data = {"files": count, "memories": len(rows), "mean_chars": chars / len(rows), "embedder": name,
            "rounds": rounds, "legs_s": legs, "embed_per_s": len(rows) / embed_s, "ingest_per_s": len(files) / first_s,
            "ratio": embed_s / first_s, "first_s": first_s, "rerun_s": rerun_s, "rerun_share": rerun_s / first_s,
            "rerun_written": len(again.written), "first_written": len(first.written)}
    md = (f"# Ingesting a folder of documents\n\n{__doc__.split(chr(10) + chr(10), 1)[1]}\n"
          + report.markdown_table(
              ["embedder", "files", "chars/file", "embedder alone docs/s", "ingest files/s", "ingest / embedder",
               "first run s", "re-run s", "re-run / first"],
              [[name, count, data["mean_chars"], data["embed_per_s"], data["ingest_per_s"], data["ratio"], first_s,
                rerun_s, data["rerun_share"]]]))
    report.write(out_dir, "documents", data, md)
    return {**data, "markdown": md}
