"""Synthetic, realistic-looking org memories over a namespace tree (deterministic by seed)."""
from __future__ import annotations

import random

NAMESPACES = ["acme", "acme/eng", "acme/eng/infra", "acme/eng/data", "acme/eng/mobile", "acme/sales",
              "acme/sales/emea", "acme/sales/apac", "acme/people", "acme/finance", "globex", "globex/rnd",
              "globex/rnd/vision", "globex/ops", "initech", "initech/it"]
PEOPLE = ["Priya", "Marcus", "Ann", "Tomasz", "Ximena", "Kenji", "Fatima", "Olu", "Greta", "Diego", "Lena", "Ravi"]
SYSTEMS = ["payments-api", "search-api", "billing", "the data lake", "the CI pipeline", "kafka", "postgres",
           "the mobile app", "the CRM", "the VPN", "okta", "the warehouse", "redis", "the feature store"]
ACTIONS = ["migrated", "deprecated", "rolled back", "load-tested", "documented", "audited", "scaled",
           "rewrote", "benchmarked", "patched", "approved", "reviewed", "paused", "launched"]
REASONS = ["after the outage", "for the Q3 roadmap", "to cut costs", "for compliance", "before the launch",
           "per the security review", "to reduce latency", "for the EMEA rollout", "after customer feedback"]
TOPICS = ["on-call", "pricing", "hiring", "latency", "retention", "budget", "roadmap", "incident", "contract",
          "onboarding", "forecast", "capacity", "vendor", "SLA"]


def memory_text(rng: random.Random, i: int) -> str:
    return (f"{rng.choice(PEOPLE)} {rng.choice(ACTIONS)} {rng.choice(SYSTEMS)} {rng.choice(REASONS)}; "
            f"{rng.choice(TOPICS)} note #{i}: {rng.randint(2, 400)} {rng.choice(['ms', 'users', 'EUR', 'hosts'])}.")


def corpus(n: int, seed: int = 7) -> dict[str, list[str]]:
    rng = random.Random(seed)
    out: dict[str, list[str]] = {ns: [] for ns in NAMESPACES}
    for i in range(n):
        out[NAMESPACES[rng.randrange(len(NAMESPACES))]].append(memory_text(rng, i))
    return out


def queries(count: int, seed: int = 11) -> list[tuple[str, str]]:
    """(caller namespace, query) pairs, callers at every depth."""
    rng = random.Random(seed)
    return [(rng.choice(NAMESPACES),
             f"who {rng.choice(ACTIONS)} {rng.choice(SYSTEMS)} {rng.choice(REASONS)} {rng.choice(TOPICS)}")
            for _ in range(count)]
