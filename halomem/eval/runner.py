"""Run candidate drivers over a live namespace on judged queries, read-only and at one instant.

Every driver plans each query over a fresh ScopedView of the namespace as of the instant the run
began (index.acl's as-of rule), so writes that land while it runs change nothing and no arm sees
a store the others did not. Refs a view did not admit are dropped, as search drops them. Nothing
is written but the run's one audit row (ops); no search row, no refs recorded as seen.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

import numpy as np

from ..ranking_metrics import graded_ndcg_at, mrr_at, recall_at
from ..drivers import DriverRegistry
from ..errors import InvalidInputError
from ..index import Scope
from ..planning import run_driver
from ..types import Namespace
from .bootstrap import Interval, draws, mean_interval, paired_difference
from .judgements import Judgement

K = 10
BUDGET = 100_000  # ranking is judged, not packing: every ref up to k counts
METRICS = ("nDCG@10", "R@10", "MRR")


def _scores(ranked: list[str], grades: dict[str, float]) -> dict[str, float]:
    relevant = set(grades)
    return {"nDCG@10": graded_ndcg_at(ranked, grades, K), "R@10": recall_at(ranked, relevant, K),
            "MRR": mrr_at(ranked, relevant, K)}


@dataclass
class DriverScores:
    driver: str
    means: dict[str, Interval]
    vs_baseline: dict[str, Interval] = field(default_factory=dict)  # empty for baseline itself

    @property
    def worse(self) -> bool:
        """Significantly worse than baseline on nDCG@10: the whole 95% interval of the difference below 0."""
        d = self.vs_baseline.get("nDCG@10")
        return d is not None and d.high < 0

    @property
    def better(self) -> bool:
        d = self.vs_baseline.get("nDCG@10")
        return d is not None and d.low > 0

    def to_dict(self) -> dict[str, Any]:
        return {"driver": self.driver, "means": {m: i.to_dict() for m, i in self.means.items()},
                "vs_baseline": {m: i.to_dict() for m, i in self.vs_baseline.items()},
                "verdict": "better" if self.better else "worse" if self.worse else "no significant difference"
                if self.vs_baseline else "reference"}


@dataclass
class EvalReport:
    namespace: str
    as_of: str
    judged: int  # queries with at least one relevant memory (the ones scored)
    unjudged: int  # queries with nothing relevant: run, not scored
    drivers: list[DriverScores]
    per_query: dict[str, list[dict[str, float]]]  # driver -> each judged query's scores, in order

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "as_of": self.as_of, "judged": self.judged, "unjudged": self.unjudged,
                "k": K, "drivers": [d.to_dict() for d in self.drivers]}

    def by_name(self, name: str) -> DriverScores:
        return next(d for d in self.drivers if d.driver == name)


def run_eval(kernel, ns: Namespace, judgements: Sequence[Judgement], drivers: Sequence[str],  # noqa: ANN001
             *, as_of: datetime | None = None) -> EvalReport:
    """Each driver in ``drivers`` (baseline is always measured: the reference) over ``judgements``."""
    names = [DriverRegistry.FALLBACK] + [d for d in dict.fromkeys(drivers) if d != DriverRegistry.FALLBACK]
    unknown = [d for d in names if not kernel.registry.has(d)]
    if unknown:
        raise InvalidInputError(f"unknown driver {unknown[0]!r} (mounted: {', '.join(kernel.registry.names())})")
    judged = [j for j in judgements if j.grades]
    if not judged:
        raise InvalidInputError("no judgement names a relevant memory: nothing to score")
    instant = as_of or datetime.now(timezone.utc)
    scope = Scope(ns, None, instant)
    per_query: dict[str, list[dict[str, float]]] = {}
    for name in names:
        driver = kernel.registry.get(name)
        rows = []
        for j in judged:
            with kernel.index.reader() as reader:
                plan = run_driver(reader, scope, kernel.embedders, driver, j.query, K, BUDGET)
            rows.append(_scores([r.ref for r in plan.refs], j.grades))
        per_query[name] = rows
    picks = draws(len(judged))
    table = {name: {m: np.array([row[m] for row in rows]) for m in METRICS} for name, rows in per_query.items()}
    reference = table[DriverRegistry.FALLBACK]
    scores = []
    for name in names:
        means = {m: mean_interval(table[name][m], picks) for m in METRICS}
        diffs = {} if name == DriverRegistry.FALLBACK else {
            m: paired_difference(table[name][m], reference[m], picks) for m in METRICS}
        scores.append(DriverScores(name, means, diffs))
    return EvalReport(ns.path, instant.isoformat(), len(judged), len(judgements) - len(judged), scores, per_query)


def markdown(report: EvalReport) -> str:
    """The report as a table: each metric's mean [95% interval], and its difference to baseline."""
    lines = [f"eval of {report.namespace} as of {report.as_of}: {report.judged} judged queries"
             + (f" ({report.unjudged} with nothing relevant, not scored)" if report.unjudged else ""), ""]
    head = ["driver", *METRICS, *(f"{m} vs baseline" for m in METRICS), "verdict"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d in report.drivers:
        cells = [d.driver] + [f"{d.means[m].value:.3f} [{d.means[m].low:.3f}, {d.means[m].high:.3f}]" for m in METRICS]
        cells += [f"{d.vs_baseline[m].value:+.3f} [{d.vs_baseline[m].low:+.3f}, {d.vs_baseline[m].high:+.3f}]"
                  if d.vs_baseline else "-" for m in METRICS]
        cells.append(d.to_dict()["verdict"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
