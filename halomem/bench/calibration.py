"""bench calibration: does a hit's score mean what halomem.relevance says, on every dev set and for
every driver? Each set is loaded into a store of its own (the shipped embedder), every driver runs
every query through planning.run_driver, and each of the top hits before the tail cut is kept with
its two measurements and whether the set calls it relevant. Reported per set and driver: the hits
in each score band and the share of them that were relevant (a calibrated score lands in its band),
the expected calibration error, and what the tail cut removes (hits, and relevant hits).

``fit``: the logistic regression that halomem.relevance ships, fit on all sets pooled (each set
weighing the same, whatever its size), and once per set left out, to show how it holds on a set it
never saw.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .. import relevance
from ..index import Scope
from ..planning import run_driver
from ..types import Namespace
from . import report
from .datasets import Dataset
from .harness import EVAL_BUDGET, EVAL_K, _driver, ephemeral_kernel, load

BANDS = (0.0, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0001)


@dataclass(frozen=True)
class Observation:
    dataset: str
    driver: str
    query: int  # its index in the dataset: hits of one query share it, in rank order
    meaning: float
    words: float
    relevant: bool


def observe(ds: Dataset, drivers: Sequence[str], embedder: str, progress: Callable[[str], None]) -> list[Observation]:
    out = []
    with ephemeral_kernel(embedder) as kernel:
        to_doc = load(kernel, ds, progress)
        for name in drivers:
            driver = _driver(kernel, name)
            for i, q in enumerate(ds.queries):
                with kernel.index.reader() as reader:
                    plan = run_driver(reader, Scope(Namespace(q.namespace)), kernel.embedders, driver, q.text,
                                      EVAL_K, EVAL_BUDGET)
                relevant = set(q.relevant)
                for r in plan.admitted[:EVAL_K]:
                    f = plan.features[r.ref]
                    out.append(Observation(ds.name, name, i, f.meaning, f.words,
                                           to_doc.get(r.ref, r.ref) in relevant))
            progress(f"{ds.name}/{name}: {sum(o.driver == name for o in out)} hits observed")
    return out


Coefficients = tuple[float, float, float]  # relevance.COEFFICIENTS
NAMES = ("intercept", "meaning", "with_words")


def fit(observations: Sequence[Observation], iterations: int = 60) -> Coefficients:
    """relevance's coefficients by logistic regression (Newton's method), each dataset weighing the
    same; a small ridge keeps them finite on separable data."""
    x = np.array([[1.0, o.meaning, o.meaning * o.words] for o in observations])
    y = np.array([1.0 if o.relevant else 0.0 for o in observations])
    sizes: dict[str, int] = {}
    for o in observations:
        sizes[o.dataset] = sizes.get(o.dataset, 0) + 1
    w = np.array([len(observations) / (len(sizes) * sizes[o.dataset]) for o in observations])
    beta = np.zeros(3)
    ridge = 1e-3 * np.eye(3)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        gradient = x.T @ (w * (y - p)) - ridge @ beta
        hessian = (x * (w * p * (1 - p))[:, None]).T @ x + ridge
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.max(np.abs(step)) < 1e-8:
            break
    return tuple(float(b) for b in beta)  # type: ignore[return-value]


def _scores(observations: Sequence[Observation], coefficients: Coefficients) -> np.ndarray:
    return np.array([relevance.score(relevance.Features(o.meaning, o.words), coefficients) for o in observations])


def bands(observations: Sequence[Observation], coefficients: Coefficients) -> list[dict]:
    """Per score band: hits, their mean score and the share that were relevant."""
    scores = _scores(observations, coefficients)
    labels = np.array([o.relevant for o in observations], dtype=float)
    rows = []
    for low, high in zip(BANDS, BANDS[1:]):
        inside = (scores >= low) & (scores < high)
        n = int(inside.sum())
        rows.append({"band": f"{low:.1f}-{min(high, 1.0):.1f}", "hits": n,
                     "mean_score": float(scores[inside].mean()) if n else None,
                     "relevant": float(labels[inside].mean()) if n else None})
    return rows


def separation(observations: Sequence[Observation], coefficients: Coefficients) -> float | None:
    """The chance that a relevant hit scores above an irrelevant one (ROC AUC): 0.5 is a coin."""
    scores = _scores(observations, coefficients)
    labels = np.array([o.relevant for o in observations])
    positives, negatives = int(labels.sum()), int(len(labels) - labels.sum())
    if not positives or not negatives:
        return None
    ranks = np.empty(len(scores))
    ranks[np.argsort(scores, kind="mergesort")] = np.arange(1, len(scores) + 1)
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def calibration_error(observations: Sequence[Observation], coefficients: Coefficients) -> float:
    """Expected calibration error over the bands: |mean score - share relevant|, weighted by hits."""
    total = len(observations)
    return sum(abs(b["mean_score"] - b["relevant"]) * b["hits"] / total
               for b in bands(observations, coefficients) if b["hits"]) if total else math.nan


def _cut(group: Sequence[Observation]) -> list[bool]:
    """Which hits the tail cut removes: those after the last one of their query worth reading."""
    removed, start = [], 0
    while start < len(group):
        end = start
        while end < len(group) and group[end].query == group[start].query:
            end += 1
        kept = relevance.cut_tail([relevance.Features(o.meaning, o.words) for o in group[start:end]])
        removed += [i >= kept for i in range(end - start)]
        start = end
    return removed


def run_calibration(datasets: Sequence[Dataset], drivers: Sequence[str], out_dir: Path, *, embedder: str = "default",
                    refit: bool = False, progress: Callable[[str], None] = lambda m: None) -> dict:
    observations = [o for ds in datasets for o in observe(ds, drivers, embedder, progress)]
    shipped = relevance.COEFFICIENTS
    fitted = fit(observations)
    used = fitted if refit else shipped
    names = [ds.name for ds in datasets]
    held_out = {name: fit([o for o in observations if o.dataset != name]) for name in names} if len(names) > 1 else {}
    per = []
    for name in names:
        for driver in drivers:
            group = [o for o in observations if o.dataset == name and o.driver == driver]
            if not group:
                continue
            cut = _cut(group)
            per.append({"dataset": name, "driver": driver, "hits": len(group),
                        "relevant": sum(o.relevant for o in group) / len(group),
                        "ece": calibration_error(group, used), "auc": separation(group, used),
                        "ece_held_out": calibration_error(group, held_out[name]) if held_out else None,
                        "below_cut": sum(cut) / len(group),
                        "relevant_below_cut": sum(o.relevant for o, c in zip(group, cut) if c)
                        / max(1, sum(o.relevant for o in group)),
                        "bands": bands(group, used)})
    data = {"embedder": embedder, "drivers": list(drivers), "datasets": names, "observations": len(observations),
            "shipped": dict(zip(NAMES, shipped)), "fitted": dict(zip(NAMES, fitted)),
            "held_out": {n: dict(zip(NAMES, c)) for n, c in held_out.items()},
            "cut": relevance.RELEVANCE_CUT, "pooled_bands": bands(observations, used),
            "pooled_ece": calibration_error(observations, used), "results": per}
    md = markdown(data)
    report.write(out_dir, "calibration", data, md)
    return {**data, "markdown": md}


def markdown(data: dict) -> str:
    s, f = data["shipped"], data["fitted"]
    lines = [
        "# Calibration: what a hit's score means",
        "",
        f"A hit's score is the kernel's estimate of the chance it is relevant (halomem.relevance), from its "
        f"cosine with the query above the embedder's noise floor and the share of the query's IDF its text holds. "
        f"{data['observations']} hits: the top {EVAL_K} of every driver ({', '.join(data['drivers'])}) for every "
        f"query of {', '.join(data['datasets'])}, embedder `{data['embedder']}`.",
        "",
        "Shipped coefficients: " + ", ".join(f"{n} {s[n]:.2f}" for n in NAMES) + ". Fit on these hits now (each set "
        "weighing the same): " + ", ".join(f"{f[n]:.2f}" for n in NAMES) + f". Tail cut at {data['cut']}.",
        "",
        "## Pooled: each score band, and the share of its hits that were relevant",
        "",
        report.markdown_table(["band", "hits", "mean score", "relevant"],
                              [[b["band"], b["hits"], b["mean_score"], b["relevant"]] for b in data["pooled_bands"]]),
        "",
        f"Expected calibration error, pooled: {data['pooled_ece']:.3f}.",
        "",
        "## Per set and driver",
        "",
        "`ECE`: with the shipped coefficients; `ECE held out`: with coefficients fit on the other sets only (how "
        "the score holds on a collection it never saw); `AUC`: the chance a relevant hit scores above an "
        "irrelevant one (0.5 is a coin). `below cut`: the share of top hits the tail cut removes; "
        "`relevant below cut`: the share of the relevant top hits among them.",
        "",
        report.markdown_table(
            ["set", "driver", "hits", "relevant", "ECE", "ECE held out", "AUC", "below cut", "relevant below cut"],
            [[r["dataset"], r["driver"], r["hits"], r["relevant"], r["ece"], r["ece_held_out"], r["auc"],
              r["below_cut"], r["relevant_below_cut"]] for r in data["results"]]),
    ]
    return "\n".join(lines) + "\n"
