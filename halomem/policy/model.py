"""Policy values: `retriever: NAME` or `ab_test: {a, b, pct_b[, shadow]}`.

The A/B arm is chosen by hashing the query text (32-bit FNV-1a) against pct_b, so the same query
always routes to the same arm: retries, replays and caches never flip drivers mid-flight. With
``shadow: true`` every caller is answered by a; b runs beside it on the queries its share picks,
and only its refs are recorded (halomem.search), for overlap and for judging it before it serves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193
DRIVER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def fnv1a32(text: str) -> int:
    h = FNV_OFFSET
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFF
    return h


@dataclass(frozen=True)
class ABTest:
    a: str
    b: str
    pct_b: int
    shadow: bool = False

    def picks_b(self, query: str) -> bool:
        return fnv1a32(query) % 100 < self.pct_b

    def arm(self, query: str) -> str:
        """The driver that answers: b on its share, unless b only shadows."""
        return self.b if self.picks_b(query) and not self.shadow else self.a

    def shadowed(self, query: str) -> str | None:
        """The driver that runs beside the answer without serving it, if any."""
        return self.b if self.shadow and self.picks_b(query) else None


@dataclass(frozen=True)
class Policy:
    retriever: str | None = None
    ab_test: ABTest | None = None
    namespace: str | None = None  # where it was set (for inherited policies)

    def to_dict(self) -> dict[str, Any]:
        if self.ab_test:
            t = self.ab_test
            return {"ab_test": {"a": t.a, "b": t.b, "pct_b": t.pct_b, **({"shadow": True} if t.shadow else {})}}
        return {"retriever": self.retriever}


# a namespace with no policy of its own or inherited: the best shipped driver on the dev sets
# (docs/bench/fusion.md); baseline stays the referee lane and the fallback
DEFAULT_POLICY = Policy(retriever="fusion")


def _driver_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not DRIVER_NAME.match(value):
        raise InvalidInputError(f"policy: {what} must be a driver name (letters, digits, '-', '_', '.')")
    return value


def parse_policy(data: Any, namespace: str | None = None) -> Policy:
    """Validate a policy mapping (from YAML, JSON or the database)."""
    if not isinstance(data, dict):
        raise InvalidInputError("policy must be a mapping with 'retriever' or 'ab_test'")
    data = {("ab_test" if k == "abTest" else k): v for k, v in data.items()}
    keys = set(data)
    if keys == {"retriever"}:
        return Policy(retriever=_driver_name(data["retriever"], "retriever"), namespace=namespace)
    if keys == {"ab_test"}:
        t = data["ab_test"]
        if not isinstance(t, dict):
            raise InvalidInputError("policy: ab_test must be a mapping {a, b, pct_b}")
        t = {("pct_b" if k == "pctB" else k): v for k, v in t.items()}
        if not {"a", "b", "pct_b"} <= set(t) <= {"a", "b", "pct_b", "shadow"}:
            raise InvalidInputError("policy: ab_test needs exactly a, b and pct_b (and optionally shadow)")
        shadow = t.get("shadow", False)
        if not isinstance(shadow, bool):
            raise InvalidInputError("policy: ab_test.shadow must be true or false")
        pct = t["pct_b"]
        if isinstance(pct, bool) or not isinstance(pct, int) or not 0 <= pct <= 100:
            raise InvalidInputError("policy: pct_b must be an integer from 0 to 100")
        return Policy(ab_test=ABTest(_driver_name(t["a"], "ab_test.a"), _driver_name(t["b"], "ab_test.b"), pct,
                                     shadow), namespace=namespace)
    raise InvalidInputError(f"policy must have exactly one of 'retriever' or 'ab_test' (got {sorted(keys)})")


def choose_driver(policy: Policy, query: str) -> str:
    if policy.ab_test:
        return policy.ab_test.arm(query)
    return policy.retriever or DEFAULT_POLICY.retriever  # type: ignore[return-value]
