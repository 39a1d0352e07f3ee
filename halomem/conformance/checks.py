"""The six checks, their fixed inputs and thresholds (see the seed's "What each check means")."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable

from ..types import RetrieverDriver, ScoredRef, estimate_tokens
from .fixture import FixtureData
from .scan import scan_source

CHECK_IDS = ("finds-planted-fact", "respects-scoped-view", "latency-envelope", "budget-discipline", "read-only",
             "deterministic-k")
PLANTED_TOP = 3
PLANTED_NEEDED = 8
LATENCY_CALLS = 20
LATENCY_BUDGET_MS = 150.0
BUDGET_TOKENS = 120
BUDGET_K = 10
DETERMINISM_QUERIES = 3
DEFAULT_K = 10
DEFAULT_BUDGET = 2000


@dataclass
class CheckResult:
    id: str
    passed: bool | None  # None: skipped
    detail: str

    @property
    def result(self) -> str:
        return "SKIP" if self.passed is None else ("PASS" if self.passed else "FAIL")


@dataclass
class Report:
    driver: str
    origin: str
    checks: list[CheckResult] = field(default_factory=list)
    isolation: str = "in-process"  # or what confined the worker the driver ran in

    @property
    def passed_count(self) -> int:
        return sum(1 for c in self.checks if c.passed)

    @property
    def ok(self) -> bool:
        return self.passed_count == len(CHECK_IDS)

    def to_dict(self) -> dict:
        return {"driver": self.driver, "origin": self.origin, "ok": self.ok, "passed": self.passed_count,
                "total": len(CHECK_IDS), "isolation": self.isolation,
                "checks": [{"id": c.id, "result": c.result, "detail": c.detail} for c in self.checks]}


@dataclass
class Call:
    refs: list[ScoredRef]
    admitted: frozenset[str]
    ms: float


Planner = Callable[[str, int, int], Call]  # (query, k, token_budget) -> one plan() over a fresh view


def _failed_call(query: str, exc: Exception) -> str:
    return f"plan({query[:40]!r}) raised {type(exc).__name__}: {str(exc)[:120]}"


def finds_planted_fact(plan: Planner, fx: FixtureData, ids: dict[str, str]) -> CheckResult:
    hits, missed = 0, []
    for fact in fx.planted:
        try:
            top = [r.ref for r in plan(fact.question, DEFAULT_K, DEFAULT_BUDGET).refs[:PLANTED_TOP]]
        except Exception as exc:
            return CheckResult(CHECK_IDS[0], False, _failed_call(fact.question, exc))
        if ids[fact.key] in top:
            hits += 1
        else:
            missed.append(fact.key)
    detail = f"{hits}/{len(fx.planted)} planted refs in top-{PLANTED_TOP} (need >= {PLANTED_NEEDED})"
    if missed:
        detail += f"; missed: {', '.join(missed)}"
    return CheckResult(CHECK_IDS[0], hits >= PLANTED_NEEDED, detail)


def respects_scoped_view(plan: Planner, fx: FixtureData, canary_ids: dict[str, str],
                         superseded_ids: dict[str, str] | None = None) -> CheckResult:
    """No sibling's canary, no superseded draft of a planted fact, nothing the view did not admit."""
    canary_refs = {ref: key for key, ref in canary_ids.items()}
    stale_refs = {ref: key for key, ref in (superseded_ids or {}).items()}
    violations: list[str] = []
    queries = [f.question for f in (*fx.planted, *fx.canaries)]
    for query in queries:
        try:
            call = plan(query, DEFAULT_K, DEFAULT_BUDGET)
        except Exception as exc:
            return CheckResult(CHECK_IDS[1], False, _failed_call(query, exc))
        for r in call.refs:
            if r.ref in canary_refs:
                violations.append(f"returned canary {canary_refs[r.ref]!r} ({r.ref}) from sibling {fx.canary_namespace}")
            elif r.ref in stale_refs:
                violations.append(f"returned the superseded draft of {stale_refs[r.ref]!r} ({r.ref}) for the present")
            elif r.ref not in call.admitted:
                violations.append(f"returned ref {r.ref!r} that the view did not admit in this call")
    detail = (f"{len(violations)} violations across {len(queries)} queries "
              f"({len(fx.canaries)} canaries in sibling ns and {len(stale_refs)} superseded drafts "
              f"{'unreachable' if not violations else 'checked'})")
    if violations:
        detail += f"; first: {violations[0]}"
    return CheckResult(CHECK_IDS[1], not violations, detail)


def latency_envelope(plan: Planner, fx: FixtureData, budget_ms: float | None) -> CheckResult:
    bound = LATENCY_BUDGET_MS if budget_ms is None else budget_ms
    queries = [f.question for f in fx.planted]
    timings = []
    try:
        plan(queries[0], DEFAULT_K, DEFAULT_BUDGET)  # warm-up, not counted
        for i in range(LATENCY_CALLS):
            timings.append(plan(queries[i % len(queries)], DEFAULT_K, DEFAULT_BUDGET).ms)
    except Exception as exc:
        return CheckResult(CHECK_IDS[2], False, f"plan() raised {type(exc).__name__}: {str(exc)[:120]}")
    p95 = statistics.quantiles(timings, n=20, method="inclusive")[18]
    override = "" if budget_ms is None else f", overridden from {LATENCY_BUDGET_MS:g}ms"
    return CheckResult(CHECK_IDS[2], p95 < bound,
                       f"p95 {p95:.1f}ms over {LATENCY_CALLS} plan() calls (bound {bound:g}ms{override})")


def budget_discipline(plan: Planner, fx: FixtureData, true_content: dict[str, str]) -> CheckResult:
    worst, worst_query, overruns = 0, "", 0
    # each planted question, and all of them in one query: every planted fact matches it, so a
    # driver that does not fit the budget overruns it even though it pads with nothing
    queries = [f.question for f in fx.planted] + [" ".join(f.question for f in fx.planted)]
    for query in queries:
        try:
            call = plan(query, BUDGET_K, BUDGET_TOKENS)
        except Exception as exc:
            return CheckResult(CHECK_IDS[3], False, _failed_call(query, exc))
        # the kernel's own estimate of what it will inject, whatever token_estimate the driver claims
        costs = [estimate_tokens(true_content.get(r.ref, r.content)) for r in call.refs]
        total = sum(costs)
        if len(costs) > 1 and total > BUDGET_TOKENS:
            overruns += 1
        if total > worst and len(costs) > 1:
            worst, worst_query = total, query
    detail = f"max sum(tokenEstimate) {worst}/{BUDGET_TOKENS} across {len(queries)} queries"
    if overruns:
        detail += f"; {overruns} responses over budget (worst: {worst_query[:40]!r})"
    return CheckResult(CHECK_IDS[3], overruns == 0, detail)


def read_only(source_path) -> CheckResult:  # noqa: ANN001 - Path | None
    if source_path is None:
        return CheckResult(CHECK_IDS[4], None, "skipped: no source path supplied")
    scan = scan_source(source_path)
    if scan.ok:
        return CheckResult(CHECK_IDS[4], True, f"{source_path}: no forbidden imports, names, strings or SQL")
    shown = "; ".join(scan.violations[:3]) + (f" (+{len(scan.violations) - 3} more)" if len(scan.violations) > 3 else "")
    return CheckResult(CHECK_IDS[4], False, f"{source_path}: {shown}")


def deterministic_k(plan: Planner, fx: FixtureData) -> CheckResult:
    """Each query asks three planted questions at once, so an honest driver ranks several facts and a
    top-3 that changes order between runs shows (a question alone may rank one fact, whose order
    cannot change)."""
    questions = [f.question for f in fx.planted]
    queries = [" ".join(questions[i:i + 3]) for i in range(0, 3 * DETERMINISM_QUERIES, 3)]
    try:
        first = [[r.ref for r in plan(q, DEFAULT_K, DEFAULT_BUDGET).refs[:3]] for q in queries]
        second = [[r.ref for r in plan(q, DEFAULT_K, DEFAULT_BUDGET).refs[:3]] for q in queries]
    except Exception as exc:
        return CheckResult(CHECK_IDS[5], False, f"plan() raised {type(exc).__name__}: {str(exc)[:120]}")
    differing = [q for q, a, b in zip(queries, first, second) if a != b]
    if differing:
        return CheckResult(CHECK_IDS[5], False, f"top-3 changed between runs for {len(differing)} of "
                                                f"{len(queries)} queries (first: {differing[0][:40]!r})")
    return CheckResult(CHECK_IDS[5], True, f"same top-3 across repeated runs of {len(queries)} queries")


__all__ = ["CHECK_IDS", "CheckResult", "Report", "RetrieverDriver"]
