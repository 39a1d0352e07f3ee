"""`policy report`: each arm's record over a window, from the audit rows and the feedback.

An arm is the driver a search's policy chose (its row's ``requested``). Per arm: searches, plan
time p50/p95 (the row's ``ms``; rows written before it was recorded are not timed), the share
that fell back to baseline, the share that returned nothing, and the helpful share of its
feedback with a Wilson 95% interval. With an A/B policy the verdict compares b with a: better or
worse when the interval of the difference in helpful share excludes zero, else "not enough data
yet" with about how many more searches per arm would decide a difference of the size seen.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

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


@dataclass
class Arm:
    driver: str
    searches: int = 0
    fallbacks: int = 0
    empty: int = 0
    feedback: int = 0
    helpful: int = 0
    timed: int = 0  # searches whose row records its time (rows written before ms= was recorded have none)
    p50: float | None = None
    p95: float | None = None

    def to_dict(self) -> dict[str, Any]:
        low, high = wilson(self.helpful, self.feedback)
        share = (lambda n: round(n / self.searches, 4) if self.searches else None)
        return {"driver": self.driver, "searches": self.searches, "timed": self.timed,
                "plan_p50_ms": round(self.p50, 3) if self.p50 is not None else None,
                "plan_p95_ms": round(self.p95, 3) if self.p95 is not None else None,
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


def _text(key: str) -> sa.ColumnElement[Any]:
    """A record's text field, or NULL when the row holds something else there."""
    value = audit_log.c.fields[key]
    return sa.case((sa.func.jsonb_typeof(value) == "string", value.astext), else_=None)


def _number(key: str) -> sa.ColumnElement[Any]:
    value = audit_log.c.fields[key]
    return sa.case((sa.func.jsonb_typeof(value) == "number", value.astext.cast(sa.Float)), else_=None)


def _pct_of(column: sa.ColumnElement[Any], q: float) -> sa.ColumnElement[Any]:
    return sa.func.percentile_cont(q).within_group(column)


def policy_report(conn: Connection, ns: Namespace, days: float = 7.0) -> dict[str, Any]:
    """The report for searches made in ``ns`` and below over the last ``days``, read from the audit
    rows' fields (data: a caller's text cannot forge one) and summed by the database, so its cost to
    the server stays small however long the window. An arm is a driver the policy chose; searches
    that named their driver (``--driver``) are counted apart, as ``manual``. Feedback counts one
    verdict per request, ref and principal, the latest; repeats are counted as ignored."""
    since = datetime.now(timezone.utc) - timedelta(days=days)
    arm_name = sa.func.coalesce(_text("requested"), _text("driver"), "?")
    searches = (sa.select(audit_log.c.seq, arm_name.label("arm"), (_text("chosen_by") == "caller").label("manual"),
                          _text("driver").label("driver"), _number("returned").label("returned"),
                          _number("ms").label("ms"), _text("shadow").label("shadow"),
                          (audit_log.c.fields.has_key("shadow_error")).label("shadow_failed"),
                          _number("shadow_overlap").label("overlap"), _number("shadow_ms").label("shadow_ms"))
                .where(audit_log.c.action == "search", in_subtree(audit_log.c.actor_ns, ns.path),
                       audit_log.c.at >= since, _text("outcome") == "ok")).cte("searches")
    ranked = (sa.select(feedback.c.seq, feedback.c.verdict,
                        sa.func.row_number().over(partition_by=(feedback.c.seq, feedback.c.ref, feedback.c.principal),
                                                  order_by=(feedback.c.at.desc(), feedback.c.id.desc())).label("nth"))
              .where(in_subtree(feedback.c.namespace, ns.path), feedback.c.at >= since)).cte("ranked")
    latest = (sa.select(ranked.c.seq, sa.func.count().label("given"),
                        sa.func.count().filter(ranked.c.verdict == "helpful").label("helpful"))
              .where(ranked.c.nth == 1).group_by(ranked.c.seq)).cte("latest")
    manual = sa.func.coalesce(searches.c.manual, False)
    per_arm = conn.execute(
        sa.select(searches.c.arm, manual.label("manual"), sa.func.count().label("searches"),
                  sa.func.count().filter(sa.func.coalesce(searches.c.driver, "") != searches.c.arm).label("fallbacks"),
                  sa.func.count().filter(searches.c.returned == 0).label("empty"),
                  sa.func.count(searches.c.ms).label("timed"),
                  _pct_of(searches.c.ms, 0.5).label("p50"), _pct_of(searches.c.ms, 0.95).label("p95"),
                  sa.func.coalesce(sa.func.sum(latest.c.given), 0).label("feedback"),
                  sa.func.coalesce(sa.func.sum(latest.c.helpful), 0).label("helpful"))
        .select_from(searches.outerjoin(latest, latest.c.seq == searches.c.seq))
        .group_by(searches.c.arm, manual).order_by(searches.c.arm)).all()
    repeats = int(conn.execute(sa.select(sa.func.count()).select_from(ranked).where(ranked.c.nth > 1)).scalar() or 0)
    shadows = conn.execute(
        sa.select(searches.c.shadow, sa.func.count().label("runs"),
                  sa.func.count().filter(sa.or_(searches.c.shadow_failed, searches.c.overlap.is_(None))).label("failures"),
                  sa.func.avg(searches.c.overlap).filter(sa.not_(searches.c.shadow_failed)).label("overlap"),
                  _pct_of(searches.c.shadow_ms, 0.5).label("p50"), _pct_of(searches.c.shadow_ms, 0.95).label("p95"))
        .where(searches.c.shadow.is_not(None)).group_by(searches.c.shadow).order_by(searches.c.shadow)).all()
    arms: dict[str, Arm] = {}
    by_caller: dict[str, Arm] = {}
    for r in per_arm:
        arm = Arm(r.arm, int(r.searches), int(r.fallbacks), int(r.empty), int(r.feedback), int(r.helpful),
                  timed=int(r.timed), p50=r.p50, p95=r.p95)
        (by_caller if r.manual else arms)[r.arm] = arm
    policy = effective_policy(conn, ns)
    report: dict[str, Any] = {"namespace": ns.path, "days": days, "policy": policy.to_dict(),
                              "policy_text": policy.describe(),
                              "arms": [arms[n].to_dict() for n in sorted(arms)],
                              "manual": [by_caller[n].to_dict() for n in sorted(by_caller)],
                              "repeated_feedback_ignored": repeats}
    report["shadows"] = [{"driver": r.shadow, "runs": int(r.runs), "failures": int(r.failures),
                          "overlap_at_k": round(float(r.overlap), 4) if r.overlap is not None else None,
                          "plan_p50_ms": r.p50, "plan_p95_ms": r.p95} for r in shadows]
    if policy.ab_test and not policy.ab_test.shadow:  # a shadow serves nobody: it gets no feedback to judge
        a, b = (arms.get(name, Arm(name)) for name in (policy.ab_test.a, policy.ab_test.b))
        report["verdict"] = verdict(a, b)
    return report
