"""bench quality: R@5, R@10, nDCG@10, MRR@10 per driver, per group, per embedder."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from . import report
from .datasets import Dataset
from .harness import ephemeral_kernel, evaluate, load
from ..ranking_metrics import METRICS


def run_quality(ds: Dataset, embedders: Sequence[str], drivers: Sequence[str], out_dir: Path,
                progress: Callable[[str], None] = lambda m: None, via: Sequence[str] = ("direct",)) -> dict:
    """``via``: how the dataset goes in, each in a store of its own (harness.load: direct, or chat for
    conversations through `halomem ingest --format chat`'s path); the report names each."""
    results = []
    for embedder, path in [(e, v) for e in embedders for v in via]:
        with ephemeral_kernel(embedder) as kernel:
            to_doc = load(kernel, ds, progress, via=path)
            if path != "direct":
                embedder = f"{embedder} via {path}"
            for run in evaluate(kernel, ds, to_doc, drivers):
                for group, metrics in sorted(run.per_group.items()):
                    results.append({"embedder": embedder, "driver": run.driver, "group": group,
                                    "queries": run.counts[group], **metrics,
                                    "plan_p50_ms": run.p50_ms, "plan_p95_ms": run.p95_ms})
                progress(f"{embedder}/{run.driver}: " + ", ".join(
                    f"{g} R@10={m['R@10']:.3f} nDCG@10={m['nDCG@10']:.3f}" for g, m in sorted(run.per_group.items())))
    headers = ["embedder", "driver", "group", "queries", *METRICS, "plan p50 ms"]
    rows = [[r["embedder"], r["driver"], r["group"], r["queries"], *(r[m] for m in METRICS), r["plan_p50_ms"]]
            for r in results]
    md = (f"# Retrieval quality: {ds.name}\n\n{ds.doc_count} memories in {len(ds.docs)} namespaces "
          f"({ds.skipped_docs} empty documents skipped), {len(ds.queries)} queries ({ds.skipped_queries} without "
          f"usable evidence skipped). Embedder `default` is what a new store gets. Each driver is warmed on a few "
          f"queries after the load (and ANALYZE) before it is timed."
          + (" Rows `via chat`: the same conversations in a store of their own, ingested as a chat file is "
             "(`halomem ingest --format chat`: intake.chat, consolidation included)." if "chat" in via else "")
          + "\n\n"
          + report.markdown_table(headers, rows))
    data = {"dataset": ds.name, "docs": ds.doc_count, "skipped_docs": ds.skipped_docs, "queries": len(ds.queries),
            "results": results}
    report.write(out_dir, f"quality-{ds.name}", data, md)
    for group in sorted({r["group"] for r in results}):
        series = {f"{r['driver']}/{r['embedder']}": {"R@10": r["R@10"], "nDCG@10": r["nDCG@10"], "MRR@10": r["MRR@10"]}
                  for r in results if r["group"] == group}
        report.bar_plot(out_dir / f"quality-{ds.name}-{group}.png", f"{ds.name} {group}", series, "score")
    return {**data, "markdown": md}
