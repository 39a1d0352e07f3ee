"""`policy report`: each arm's record over a window, from the audit rows and the feedback.

An arm is the driver a search's policy chose (its row's ``requested=``). Per arm: searches, plan
time p50/p95 (the row's ``ms=``; rows written before it was recorded are not timed), the share
that fell back to baseline, the share that returned nothing, and the helpful share of its
feedback with a Wilson 95% interval. With an A/B policy the verdict compares b with a: better or
worse when the interval of the difference in helpful share excludes zero, else "not enough data
yet" with about how many more searches per arm would decide a difference of the size seen.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..audit.log import fields
from ..db.schema import audit_log, feedback
from ..index.acl import in_subtree
from ..types import Namespace
from .store import effective_policy

Z = 1.96  # 95%
SMALLEST_DIFFERENCE = 0.05  # the difference planned for when the arms have shown none yet


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The Wilson score 95% interval of a proportion (sound at small n and at 0 or 1)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _pct(values: list[float], q: int) -> float | None:
    if not values:
        return None
    return values[0] if len(values) == 1 else statistics.quantiles(values, n=100, method="inclusive")[q - 1]


@dataclass
class Arm:
    driver: str
    searches: int = 0
    fallbacks: int = 0
    empty: int = 0
    feedback: int = 0
    helpful: int = 0
    timings: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        low, high = wilson(self.helpful, self.feedback)
        share = (lambda n: round(n / self.searches, 4) if self.searches else None)
        p50, p95 = _pct(list(self.timings), 50), _pct(list(self.timings), 95)
        return {"driver": self.driver, "searches": self.searches, "timed": len(self.timings),
                "plan_p50_ms": round(p50, 3) if p50 is not None else None,
                "plan_p95_ms": round(p95, 3) if p95 is not None else None,
                "fallback_rate": share(self.fallbacks), "empty_rate": share(self.empty),
                "feedback": self.feedback, "helpful": self.helpful,
                "helpful_rate": round(self.helpful / self.feedback, 4) if self.feedback else None,
                "helpful_interval": [round(low, 4), round(high, 4)]}


def verdict(a: Arm, b: Arm) -> dict[str, Any]:
    """b against a on the helpful share of their feedback."""
    if not a.feedback or not b.feedback:
        return {"verdict": "not enough data yet", "why": "an arm has no feedback", "more_searches": None}
    pa, pb = a.helpful / a.feedback, b.helpful / b.feedback
    spread = math.sqrt(pa * (1 - pa) / a.feedback + pb * (1 - pb) / b.feedback)
    diff = pb - pa
    low, high = diff - Z * spread, diff + Z * spread
    out: dict[str, Any] = {"difference": round(diff, 4), "interval": [round(low, 4), round(high, 4)]}
    if spread > 0 and (low > 0 or high < 0):
        return {**out, "verdict": f"{b.driver} better" if diff > 0 else f"{b.driver} worse", "more_searches": 0}
    size = max(abs(diff), SMALLEST_DIFFERENCE)
    variance = pa * (1 - pa) + pb * (1 - pb) or 0.5  # all-or-nothing so far: plan for the widest spread
    needed = math.ceil(Z * Z * variance / (size * size))  # feedback per arm
    rate = min(a.feedback / max(a.searches, 1), b.feedback / max(b.searches, 1)) or 1.0
    more = max(0, math.ceil((needed - min(a.feedback, b.feedback)) / rate))
    return {**out, "verdict": "not enough data yet", "more_searches": more,
            "why": f"about {needed} feedback per arm tell a difference of {size:.2f} apart"}


def policy_report(conn: Connection, ns: Namespace, days: float = 7.0) -> dict[str, Any]:
    """The report for searches made in ``ns`` and below over the last ``days``."""
    since = datetime.now(timezone.utc) - timedelta(days=days)
    rows = conn.execute(sa.select(audit_log.c.seq, audit_log.c.detail).where(
        audit_log.c.action == "search", in_subtree(audit_log.c.actor_ns, ns.path), audit_log.c.at >= since,
        audit_log.c.detail.startswith("search ok"))).all()
    verdicts = dict(conn.execute(sa.select(feedback.c.seq, sa.func.array_agg(feedback.c.verdict)).where(
        in_subtree(feedback.c.namespace, ns.path), feedback.c.at >= since).group_by(feedback.c.seq)).all())
    arms: dict[str, Arm] = {}
    timings: dict[str, list[float]] = {}
    shadows: dict[str, dict[str, list[float] | int]] = {}
    for seq, detail in rows:
        f = fields(detail)
        if "shadow" in f:  # a shadow arm's run beside this search (ab_test shadow)
            run = shadows.setdefault(f["shadow"], {"runs": 0, "failures": 0, "overlap": [], "ms": []})
            run["runs"] += 1
            if "shadow_error" in f:
                run["failures"] += 1
            else:
                run["overlap"].append(float(f["shadow_overlap"]))
                run["ms"].append(float(f["shadow_ms"]))
        name = f.get("requested") or f.get("driver", "?")
        arm = arms.setdefault(name, Arm(name))
        arm.searches += 1
        arm.fallbacks += f.get("driver") != name
        arm.empty += f.get("returned") == "0"
        if "ms" in f:
            timings.setdefault(name, []).append(float(f["ms"]))
        given = verdicts.get(seq) or []
        arm.feedback += len(given)
        arm.helpful += sum(v == "helpful" for v in given)
    for name, ms in timings.items():
        arms[name].timings = tuple(ms)
    policy = effective_policy(conn, ns)
    report: dict[str, Any] = {"namespace": ns.path, "days": days, "policy": policy.to_dict(),
                              "arms": [arms[n].to_dict() for n in sorted(arms)]}
    report["shadows"] = [{"driver": name, "runs": s["runs"], "failures": s["failures"],
                          "overlap_at_k": round(statistics.fmean(s["overlap"]), 4) if s["overlap"] else None,
                          "plan_p50_ms": _pct(s["ms"], 50), "plan_p95_ms": _pct(s["ms"], 95)}
                         for name, s in sorted(shadows.items())]
    if policy.ab_test and not policy.ab_test.shadow:  # a shadow serves nobody: it gets no feedback to judge
        a, b = (arms.get(name, Arm(name)) for name in (policy.ab_test.a, policy.ab_test.b))
        report["verdict"] = verdict(a, b)
    return report
