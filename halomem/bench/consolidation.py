"""bench consolidation: how well a write tells a near-copy of a live memory from a distinct fact.

A generated set (seeded): facts from templates over people, teams, services, places, days and
numbers; for each, paraphrased copies (case, punctuation, a filler word before, a synonym, a clause
moved, a parenthetical after) and distinct facts (the same template with another value: an update
is a distinct fact; another template of the same subject; another fact altogether). Each pair is
scored as the write path scores it (write.consolidate: the cosine of the two texts' vectors as a
share of the way from the embedder's floor to 1, the share of meaningful words they share, and
whether their numbers agree); the report sweeps the two thresholds and gives precision and recall
for each, marking the setting shipped. Goal (issue 47): precision >= 0.95 at recall >= 0.8.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from . import report

PEOPLE = ["Maria", "Ken", "Priya", "Tomas", "Aiko", "Dmitri", "Lena", "Omar", "Grace", "Yusuf", "Ines", "Bo"]
TEAMS = ["payments", "billing", "search", "platform", "mobile", "data", "security", "growth", "support", "infra"]
SERVICES = ["checkout", "ledger", "gateway", "indexer", "scheduler", "notifier", "auth", "reporting"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
CITIES = ["Lisbon", "Berlin", "Osaka", "Denver", "Nairobi", "Oslo", "Lima", "Pune"]
TEMPLATES = [  # (template, paraphrase of it): the paraphrase keeps every slot, says it in other words
    ("{p} leads the {t} team.", "The {t} team is led by {p}."),
    ("The {s} service is deployed every {d}.", "Every {d} the {s} service gets deployed."),
    ("{p} is on call for {s} this week.", "This week {p} holds the on-call pager for {s}."),
    ("The {t} team meets in room {n} on {d}s.", "On {d}s the {t} team meets in room {n}."),
    ("Logs of {s} are kept for {n} days.", "{s} logs are retained for {n} days."),
    ("The {c} office opens at {n} am.", "At {n} am the {c} office opens."),
    ("{p} moved from the {t} team to {c}.", "{p} left the {t} team and relocated to {c}."),
    ("Expense reports for the {t} team are due on day {n} of the month.",
     "The {t} team's expense reports must be in by day {n} of each month."),
]
SYNONYMS = {"leads": "heads", "deployed": "released", "every": "each", "kept": "stored", "opens": "starts",
            "meets": "gathers", "moved": "transferred", "due": "expected", "week": "week's rotation"}
FILLERS = ["Note: ", "FYI, ", "Reminder: ", "Update: ", "As a reminder, "]


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    copy: bool  # a near-copy (the same fact) or a distinct fact
    kind: str


def _fill(template: str, slots: dict[str, str]) -> str:
    return template.format(**slots)


def _slots(rng: random.Random) -> dict[str, str]:
    return {"p": rng.choice(PEOPLE), "t": rng.choice(TEAMS), "s": rng.choice(SERVICES), "d": rng.choice(DAYS),
            "c": rng.choice(CITIES), "n": str(rng.randint(2, 90))}


def _variants(rng: random.Random, fact: str, paraphrase: str) -> list[tuple[str, str]]:
    """Near-copies of ``fact``: (text, kind)."""
    out = [(fact.lower(), "case"), (fact.rstrip("."), "punctuation"), (rng.choice(FILLERS) + fact, "filler"),
           (fact.rstrip(".") + " (as of this quarter).", "parenthetical"), (paraphrase, "reworded")]
    words = fact.split()
    swaps = [i for i, w in enumerate(words) if w.strip(".,").lower() in SYNONYMS]
    if swaps:
        i = rng.choice(swaps)
        word = words[i].strip(".,")
        words[i] = words[i].replace(word, SYNONYMS[word.lower()])
        out.append((" ".join(words), "synonym"))
    return out


def generate(facts: int = 120, seed: int = 47) -> list[Pair]:
    """``facts`` base facts, their near-copies and as many distinct facts of three kinds."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for _ in range(facts):
        template, paraphrase = rng.choice(TEMPLATES)
        slots = _slots(rng)
        fact = _fill(template, slots)
        for text, kind in _variants(rng, fact, _fill(paraphrase, slots)):
            pairs.append(Pair(fact, text, True, kind))
        changed = dict(slots)
        key = rng.choice([k for k in slots if "{" + k + "}" in template])
        while changed[key] == slots[key]:
            changed[key] = _slots(rng)[key]
        pairs.append(Pair(fact, _fill(template, changed), False, "updated value"))
        other, _ = rng.choice([t for t in TEMPLATES if t[0] != template])
        pairs.append(Pair(fact, _fill(other, slots), False, "same subject, other fact"))
        pairs.append(Pair(fact, _fill(rng.choice(TEMPLATES)[0], _slots(rng)), False, "another fact"))
    return pairs


def score_pairs(pairs: Sequence[Pair], embedder) -> list[tuple[float, float, bool]]:  # noqa: ANN001
    """(cosine share above the floor, word overlap, numbers agree) per pair, as write.consolidate sees them."""
    from ..embed.calibrate import noise_floor
    from ..write.consolidate import same_facts, word_overlap, words

    floor = noise_floor(embedder)
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vectors = dict(zip(texts, embedder.embed(texts)))
    out = []
    for p in pairs:
        cosine = sum(x * y for x, y in zip(vectors[p.a], vectors[p.b]))
        out.append(((cosine - floor) / (1.0 - floor), word_overlap(words(p.a), words(p.b)), same_facts(p.a, p.b)))
    return out


def sweep(pairs: Sequence[Pair], scores: Sequence[tuple[float, float, bool]]) -> list[dict]:
    rows = []
    for cos_min in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9):
        for words_min in (0.3, 0.4, 0.5, 0.6, 0.7):
            flagged = [c >= cos_min and w >= words_min and same for c, w, same in scores]
            tp = sum(f and p.copy for f, p in zip(flagged, pairs))
            fp = sum(f and not p.copy for f, p in zip(flagged, pairs))
            positives = sum(p.copy for p in pairs)
            rows.append({"cosine_share": cos_min, "word_overlap": words_min,
                         "precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / positives})
    return rows


def run_consolidation(embedders: Sequence[str], out_dir: Path, progress: Callable[[str], None] = lambda m: None,
                      facts: int = 120) -> dict:
    from ..embed import get_embedder
    from ..write.consolidate import NEAR_COSINE, NEAR_WORDS

    pairs = generate(facts)
    results = []
    for spec in embedders:
        embedder = get_embedder(None if spec == "default" else spec)
        scores = score_pairs(pairs, embedder)
        for row in sweep(pairs, scores):
            shipped = (row["cosine_share"], row["word_overlap"]) == (NEAR_COSINE, NEAR_WORDS)
            results.append({"embedder": embedder.name, **row, "shipped": shipped})
        by_kind: dict[str, list[bool]] = {}
        for pair, (c, w, same) in zip(pairs, scores):
            by_kind.setdefault(pair.kind, []).append(c >= NEAR_COSINE and w >= NEAR_WORDS and same)
        shipped_row = next(r for r in results if r["embedder"] == embedder.name and r["shipped"])
        progress(f"{embedder.name}: shipped setting precision {shipped_row['precision']:.3f} recall "
                 f"{shipped_row['recall']:.3f}; flagged by kind: " + ", ".join(
                     f"{k} {sum(v)}/{len(v)}" for k, v in sorted(by_kind.items())))
    headers = ["embedder", "cosine share", "word overlap", "precision", "recall", "shipped"]
    rows = [[r["embedder"], r["cosine_share"], r["word_overlap"], r["precision"], r["recall"],
             "yes" if r["shipped"] else ""] for r in results]
    md = (f"# Near-copy detection (write.consolidate)\n\n{__doc__.split(chr(10) + chr(10), 1)[1]}\n"
          f"{len(pairs)} pairs ({sum(p.copy for p in pairs)} near-copies) from {facts} facts.\n\n"
          + report.markdown_table(headers, rows))
    data = {"pairs": len(pairs), "copies": sum(p.copy for p in pairs), "results": results}
    report.write(out_dir, "consolidation", data, md)
    return {**data, "markdown": md}
