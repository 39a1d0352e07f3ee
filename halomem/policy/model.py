"""Policy values, facet by facet: routing (`retriever: NAME` or `ab_test: {a, b, pct_b[, shadow]}`),
`consolidate` (what a write does about a near-copy) and `ttl` (how long a memory stays current).

The A/B arm is chosen by hashing the query text (32-bit FNV-1a) against pct_b, so the same query
always routes to the same arm: retries, replays and caches never flip drivers mid-flight. With
``shadow: true`` every caller is answered by a; b runs beside it on the queries its share picks,
and only its refs are recorded (halomem.search), for overlap and for judging it before it serves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..errors import InvalidInputError
from ..limits import MAX_LLM_TOKENS_PER_DAY

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


CONSOLIDATE = ("off", "report", "skip-similar")  # what a write does about a near-copy (write.consolidate)
DEFAULT_CONSOLIDATE = "report"
FACETS = ("routing", "consolidate", "ttl", "llm_tokens_per_day")  # set, inherited and cleared one by one
KEYS = ("retriever", "ab_test", "consolidate", "ttl", "llm_tokens_per_day")  # a policy mapping's keys
NO_TTL = "never"  # a ttl that overrides an inherited one: memories stay current until superseded


def ttl_span(value: str | None) -> "timedelta | None":
    """A ttl facet's span (None: no ttl, or ``never``)."""
    from ..instants import parse_span
    from ..limits import MAX_DAYS

    if value is None or value == NO_TTL:
        return None
    return parse_span(value, what="policy: ttl", limit=timedelta(days=MAX_DAYS))


@dataclass(frozen=True)
class Policy:
    """A namespace's policy: the facets it sets itself (``to_dict``), or, from ``effective_policy``,
    each facet from the nearest namespace of the lineage that sets it, else halomem's default.

    - routing: ``retriever: NAME`` or ``ab_test: {a, b, pct_b[, shadow]}``: which driver searches;
    - ``consolidate``: off | report | skip-similar: what a write does about a near-copy of a live
      memory (report it beside the new id, the default; or write nothing and name the copy);
    - ``ttl``: a span such as ``90d`` (or ``never``): a memory of the namespace older than it leaves
      present reads at once, and maintenance closes its validity (history and as-of keep it);
    - ``llm_tokens_per_day``: the chat model tokens (in and out) formation may spend for the namespace
      in a UTC day (unset: the server's ``llm_tokens_per_day`` setting; 0: no model calls).
    """

    retriever: str | None = None
    ab_test: ABTest | None = None
    namespace: str | None = None  # whose policy this is; of an effective one: where its routing was set
    consolidate: str | None = None
    origins: tuple[tuple[str, str], ...] = ()  # (facet, namespace it came from) of an effective policy
    ttl: str | None = None  # as set ("90d", "never"); ttl_span reads it
    llm_tokens_per_day: int | None = None

    @property
    def routes(self) -> bool:
        return bool(self.retriever or self.ab_test)

    @property
    def consolidation(self) -> str:
        return self.consolidate or DEFAULT_CONSOLIDATE

    def origin(self, facet: str) -> str:
        """The namespace a facet of an effective policy came from, or "default"."""
        return dict(self.origins).get(facet, "default")

    def to_dict(self) -> dict[str, Any]:
        """The facets set (the whole effective policy, defaults included, for an effective one)."""
        out: dict[str, Any] = {}
        if self.ab_test:
            t = self.ab_test
            out["ab_test"] = {"a": t.a, "b": t.b, "pct_b": t.pct_b, **({"shadow": True} if t.shadow else {})}
        elif self.retriever:
            out["retriever"] = self.retriever
        if self.consolidate:
            out["consolidate"] = self.consolidate
        if self.ttl:
            out["ttl"] = self.ttl
        if self.llm_tokens_per_day is not None:
            out["llm_tokens_per_day"] = self.llm_tokens_per_day
        return out

    def effective_json(self, where: str) -> dict[str, Any]:
        """The one JSON shape of an effective policy (results.PolicyJSON): every facet, defaults
        included, with the namespace each came from ("default": halomem's own)."""
        origins = dict(self.origins)
        return {**self.to_dict(), "consolidate": self.consolidation, "ttl": self.ttl or NO_TTL,
                "llm_tokens_per_day": self.llm_tokens_per_day, "namespace": where,
                "from": origins.get("routing", "default"),
                "origins": {facet: origins.get(facet, "default") for facet in FACETS}}

    @classmethod
    def from_effective_json(cls, data: dict[str, Any]) -> "Policy":
        """An effective policy as ``effective_json`` wrote it (the remote client reads it back)."""
        facets = {k: v for k, v in data.items() if k in KEYS and v is not None}
        origins = tuple(sorted((k, v) for k, v in (data.get("origins") or {}).items() if v != "default"))
        parsed = parse_policy(facets)
        source = data.get("from")
        return cls(parsed.retriever, parsed.ab_test, None if source in (None, "default") else source,
                   parsed.consolidate, origins, None if parsed.ttl == NO_TTL else parsed.ttl, parsed.llm_tokens_per_day)

    def describe_routing(self) -> str:
        """The routing in words: 'retriever graph' or 'A/B split: 75% of queries to baseline, ...'."""
        if self.ab_test:
            t = self.ab_test
            if t.shadow:
                return f"A/B shadow: {t.a} answers every query; {t.b} runs beside it on {t.pct_b}% (by query hash)"
            return f"A/B split: {100 - t.pct_b}% of queries to {t.a}, {t.pct_b}% to {t.b} (by query hash)"
        return f"retriever {self.retriever or DEFAULT_POLICY.retriever}"

    def describe(self) -> str:
        """The policy in words, for people (`policy set/show`, `policy report`)."""
        budget = f"; model tokens a day: {self.llm_tokens_per_day}" if self.llm_tokens_per_day is not None else ""
        return self.describe_routing() + f"; near-copies: {self.consolidation}" + (f"; ttl: {self.ttl}" if self.ttl else
                                                                                    "") + budget

    def merged(self, nearer: "Policy", where: str) -> "Policy":
        """This (an ancestor's effective policy) with each facet ``nearer`` (set at ``where``) sets."""
        origins = dict(self.origins)
        routing = (self.retriever, self.ab_test, self.namespace)
        if nearer.routes:
            routing = (nearer.retriever, nearer.ab_test, where)
            origins["routing"] = where
        consolidate = self.consolidate
        if nearer.consolidate:
            consolidate, origins["consolidate"] = nearer.consolidate, where
        ttl = self.ttl
        if nearer.ttl:
            ttl, origins["ttl"] = (None if nearer.ttl == NO_TTL else nearer.ttl), where
        budget = self.llm_tokens_per_day
        if nearer.llm_tokens_per_day is not None:
            budget, origins["llm_tokens_per_day"] = nearer.llm_tokens_per_day, where
        return Policy(*routing, consolidate=consolidate, origins=tuple(sorted(origins.items())), ttl=ttl,
                      llm_tokens_per_day=budget)


# a namespace with no policy of its own or inherited: the best shipped driver on the dev sets
# (docs/bench/fusion.md); baseline stays the referee lane and the fallback
DEFAULT_POLICY = Policy(retriever="fusion")


def _driver_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not DRIVER_NAME.match(value):
        raise InvalidInputError(f"policy: {what} must be a driver name (letters, digits, '-', '_', '.')")
    return value


def parse_policy(data: Any, namespace: str | None = None) -> Policy:
    """Validate a policy mapping (from YAML, JSON or the database): one or more facets."""
    if not isinstance(data, dict) or not data:
        raise InvalidInputError("policy must be a mapping with 'retriever' or 'ab_test', and/or 'consolidate', 'ttl',"
                                " 'llm_tokens_per_day'")
    data = {("ab_test" if k == "abTest" else k): v for k, v in data.items()}
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise InvalidInputError(f"policy: unknown key(s) {', '.join(map(str, unknown))} (allowed: {', '.join(KEYS)})")
    if "retriever" in data and "ab_test" in data:
        raise InvalidInputError("policy must have at most one of 'retriever' or 'ab_test'")
    retriever = _driver_name(data["retriever"], "retriever") if "retriever" in data else None
    ab_test = _ab_test(data["ab_test"]) if "ab_test" in data else None
    consolidate = data.get("consolidate")
    if consolidate is not None and consolidate not in CONSOLIDATE:
        raise InvalidInputError(f"policy: consolidate must be one of {', '.join(CONSOLIDATE)}")
    ttl = data.get("ttl")
    if ttl is not None:
        if not isinstance(ttl, str):
            raise InvalidInputError("policy: ttl must be a span such as 90d, 12h or 2w, or never")
        ttl = ttl.strip().lower()
        ttl_span(ttl)  # refused when malformed or beyond the limit
    budget = data.get("llm_tokens_per_day")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or not 0 <= budget <= MAX_LLM_TOKENS_PER_DAY):
        raise InvalidInputError(f"policy: llm_tokens_per_day must be a whole number of tokens, 0 to "
                                f"{MAX_LLM_TOKENS_PER_DAY}")
    return Policy(retriever, ab_test, namespace, consolidate, ttl=ttl, llm_tokens_per_day=budget)


def _ab_test(t: Any) -> ABTest:
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
    return ABTest(_driver_name(t["a"], "ab_test.a"), _driver_name(t["b"], "ab_test.b"), pct, shadow)


def combine(own: dict[str, Any] | None, wanted: dict[str, Any]) -> dict[str, Any]:
    """A namespace's own policy after setting ``wanted``'s facets (the others it set stay)."""
    out = dict(own or {})
    if "retriever" in wanted or "ab_test" in wanted:
        out.pop("retriever", None)
        out.pop("ab_test", None)
    out.update(wanted)
    return out


def choose_driver(policy: Policy, query: str) -> str:
    if policy.ab_test:
        return policy.ab_test.arm(query)
    return policy.retriever or DEFAULT_POLICY.retriever  # type: ignore[return-value]
