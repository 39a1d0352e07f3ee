"""A throwaway kernel on an ephemeral embedded server, and ranking a dataset through drivers."""
from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..config import Settings
from ..db.embedded import ephemeral_server
from ..index import Scope
from ..index.reader import concept_ref
from ..planning import run_driver
from ..types import Namespace
from .datasets import Dataset
from ..ranking_metrics import METRICS, score_all

EVAL_K = 10
EVAL_BUDGET = 1_000_000  # measure ranking, not budget trimming
WARM_QUERIES = 5  # untimed plans per driver first: caches, the planner, the embedder's session
# fusion's BM25 and vector lanes, each alone over its own pool, no context: what the default must add to
# (bench quality --lanes)
LANES = ("fusion/bm25-alone", "fusion/vectors-alone")


def _driver(kernel, name: str):  # noqa: ANN001, ANN202
    if name in LANES:
        from ..drivers.fusion import FusionDriver

        # each lane alone: no context and no coverage lane (fusion's third; until issue 54's pairs both rows carried it)
        return FusionDriver(*((1.0, 0.0) if name == LANES[0] else (0.0, 1.0)), context=False, coverage_weight=0.0)
    return kernel.registry.get(name)


@contextlib.contextmanager
def ephemeral_kernel(embedder: str | None = "hash") -> Iterator["Kernel"]:  # noqa: F821
    """``embedder`` None or "default": what a new store gets."""
    from ..kernel import Kernel

    embedder = None if embedder == "default" else embedder
    with ephemeral_server(prefix="halomem-bench-") as url:
        kernel = Kernel.boot(Settings(home=Path("/nonexistent-halomem-home"), database_url=url, embedder=embedder),
                             mount_plugins=False)
        try:
            yield kernel
        finally:
            kernel.close()


def load(kernel, ds: Dataset, progress: Callable[[str], None] = lambda m: None,  # noqa: ANN001
         via: str = "direct") -> dict[str, str]:
    """Bulk-ingest every namespace; returns memory id -> dataset doc id. ``via="chat"``: a dataset of
    conversation turns goes in as a chat file does (`halomem ingest --format chat`: intake.chat,
    consolidation included), the others as they always do."""
    import json

    to_doc: dict[str, str] = {}
    for ns, docs in ds.docs.items():
        if via == "chat" and docs and all(d.turn for d in docs):
            raw = "\n".join(json.dumps(d.turn, ensure_ascii=False) for d in docs).encode("utf-8")
            report = kernel.ingest_bytes(ns, raw, fmt="chat", label=f"bench-{ds.name}.jsonl")
            for item, doc in zip(report.items, docs):
                to_doc.setdefault(item.id, doc.id)
        else:
            ids = kernel.ingest_texts(ns, [d.text for d in docs], sources=[d.source for d in docs],
                                      label=f"bench:{ds.name}")
            to_doc.update(zip(ids, (d.id for d in docs)))
        for name in ds.entities.get(ns, []):
            kernel.add_entity(ns, name)
        progress(f"loaded {ns}: {len(docs)} docs")
    for ns, concepts in ds.concepts.items():
        for concept in concepts:
            kernel.put_concept(ns, concept.source, concept.text)
            to_doc[concept_ref(ns, concept.source)] = concept.id
        progress(f"loaded {ns}: {len(concepts)} concepts")
    with kernel.engine.connect() as conn:  # the planner's statistics: a fresh load has none, and the
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")  # first driver paid for it
    return to_doc


@dataclass
class DriverRun:
    driver: str
    per_group: dict[str, dict[str, float]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    p50_ms: float = 0.0
    p95_ms: float = 0.0

    @property
    def headline(self) -> dict[str, float]:
        """The metrics a dev set is judged by: LoCoMo's answerable questions (cat1-4), else a set's one group."""
        return self.per_group.get("cat1-4") or next(iter(self.per_group.values()))


def evaluate(kernel, ds: Dataset, to_doc: dict[str, str], drivers: Sequence[str],  # noqa: ANN001
             instances: Mapping[str, Any] | None = None) -> list[DriverRun]:
    """``instances``: drivers built by the caller (a candidate setting), by the name to report."""
    runs = []
    for name in drivers:
        driver = (instances or {}).get(name) or _driver(kernel, name)
        sums: dict[str, dict[str, float]] = {}
        counts: dict[str, int] = {}
        timings = []

        def plan(q):  # noqa: ANN001, ANN202 - (refs, plan() milliseconds) in a view for q's namespace
            with kernel.index.reader() as reader:
                run = run_driver(reader, Scope(Namespace(q.namespace)), kernel.embedders, driver, q.text, EVAL_K,
                                 EVAL_BUDGET)
            return run.refs, run.ms

        for q in ds.queries[:WARM_QUERIES]:
            plan(q)
        for q in ds.queries:
            refs, ms = plan(q)
            timings.append(ms)
            ranked = [to_doc.get(r.ref, r.ref) for r in refs]
            scores = score_all(ranked, set(q.relevant))
            group = sums.setdefault(q.group, dict.fromkeys(METRICS, 0.0))
            for metric, value in scores.items():
                group[metric] += value
            counts[q.group] = counts.get(q.group, 0) + 1
        run = DriverRun(name, {g: {m: v / counts[g] for m, v in s.items()} for g, s in sums.items()}, counts)
        if timings:
            run.p50_ms = statistics.median(timings)
            run.p95_ms = statistics.quantiles(timings, n=20, method="inclusive")[18] if len(timings) > 1 else timings[0]
        runs.append(run)
    return runs
