"""Synthetic, realistic-looking org memories over a namespace tree (deterministic by seed)."""
from __future__ import annotations

import itertools
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


# --- long documents: 150-300-word paragraphs over a Zipf-distributed vocabulary -----------------
_ONSETS = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "br", "ch", "cl", "dr",
           "gr", "pl", "pr", "sh", "st", "tr", "th"]
_NUCLEI = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "x"]
# function words as they occur in English prose: the analyzer drops them, as it does in real text
_FUNCTION_WORDS = ("the of and to a in is that for it as with was on be by this are from at or an which but"
                   " not have has were their they its can also been more than these into other such").split()
LONG_VOCABULARY = 30_000
ZIPF_EXPONENT = 1.07  # word frequencies in English text follow Zipf's law with s close to 1


def _vocabulary(size: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        syllables = rng.choice((1, 2, 2, 3, 3, 4))
        words["".join(rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS) for _ in range(syllables))] = None
    return list(words)


class LongCorpus:
    """Deterministic long documents, each mostly about a few topic words, and queries that name
    some of a document's words (rarer ones more likely, as a person asking would)."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = _vocabulary(LONG_VOCABULARY, seed)
        self.weights = [1.0 / (rank + 1) ** ZIPF_EXPONENT for rank in range(LONG_VOCABULARY)]
        self.cumulative = list(itertools.accumulate(self.weights))

    def paragraph(self) -> str:
        rng = self.rng
        topic = rng.choices(self.words[200:], k=rng.randint(3, 6))  # what this paragraph is about
        length = rng.randint(150, 300)
        out = []
        for _ in range(length):
            roll = rng.random()
            if roll < 0.45:
                out.append(rng.choice(_FUNCTION_WORDS))
            elif roll < 0.55:
                out.append(rng.choice(topic))
            else:
                out.append(rng.choices(self.words, cum_weights=self.cumulative)[0])
        sentences, start = [], 0
        while start < len(out):
            end = start + rng.randint(8, 25)
            sentences.append(" ".join(out[start:end]).capitalize() + ".")
            start = end
        return " ".join(sentences)

    def corpus(self, n: int) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {ns: [] for ns in NAMESPACES}
        for _ in range(n):
            out[NAMESPACES[self.rng.randrange(len(NAMESPACES))]].append(self.paragraph())
        return out

    def queries(self, docs: dict[str, list[str]], count: int, seed: int = 11) -> list[tuple[str, str]]:
        """(caller namespace, query): 3-7 words of one of the caller's visible paragraphs."""
        rng = random.Random(seed)
        out = []
        while len(out) < count:
            caller = rng.choice(NAMESPACES)
            lineage = [ns for ns in NAMESPACES if caller == ns or caller.startswith(ns + "/")]
            texts = docs[rng.choice(lineage)]
            if not texts:
                continue
            words = [w.strip(".").lower() for w in rng.choice(texts).split()]
            content = [w for w in words if w not in _FUNCTION_WORDS]
            picked = rng.sample(content, min(len(content), rng.randint(3, 7)))
            out.append((caller, "what about " + " ".join(picked)))
        return out
