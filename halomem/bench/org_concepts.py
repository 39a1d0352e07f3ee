"""A generated org corpus whose questions are answered by an L3 concept, not by any one memory.

Each topic has a concept (a how-it-works page kept in an ancestor namespace) and many memories
that mention the same words in passing (who paused deploys when, which ticket changed what), the
distractors a real memory store is full of. Each question asks how the topic works, in the words a
person would use; its one relevant item is the concept. Deterministic by seed.
"""
from __future__ import annotations

import random

from .datasets import Dataset, Doc, Query

# (title, concept body, keywords that memories mention, questions)
TOPICS = [
    ("How deploys work", "Every merge to main builds an image; the pipeline ships it to staging, runs smoke tests,"
     " then a canary takes 5% of traffic for 30 minutes before the rollout finishes. Rollback is one command.",
     ["deploy", "canary", "staging", "rollout", "pipeline"],
     ["how do deploys work", "what happens when I ship a change to production", "explain the rollout process"]),
    ("How on-call works", "Each team keeps a weekly on-call rotation; the primary acknowledges pages within 5 minutes"
     " and hands over every Monday at 10:00 with a written summary of open incidents.",
     ["on-call", "pager", "rotation", "handover", "page"],
     ["how does on-call work", "who answers pages and when is the handover", "what is the on-call rotation"]),
    ("How expense reports work", "Submit receipts in the finance portal within 30 days; your manager approves,"
     " finance reimburses with the next payroll. Meals over 60 EUR need a note naming the guests.",
     ["expense", "receipt", "reimbursement", "finance", "payroll"],
     ["how do I get reimbursed for expenses", "how do expense reports work", "where do receipts go"]),
    ("How hiring loops work", "A loop is four interviews: a screen, a work sample, a system design and a values"
     " conversation; the panel writes feedback before the debrief, where the hiring manager decides.",
     ["interview", "candidate", "debrief", "hiring", "panel"],
     ["how does the interview loop work", "what are the steps to hire a candidate", "how do hiring decisions get made"]),
    ("How code review works", "Every pull request needs one approving review from a code owner; reviewers answer"
     " within one working day and block only on correctness, security or missing tests.",
     ["review", "pull request", "approval", "reviewer", "code owner"],
     ["how does code review work", "who has to approve my pull request", "what are the review rules"]),
    ("How release freezes work", "Two weeks before quarter end and during major events, production changes stop"
     " except for fixes approved by the release captain; the freeze calendar is in the wiki.",
     ["freeze", "release", "captain", "quarter end", "exception"],
     ["how do release freezes work", "can I ship during the freeze", "who approves changes in a freeze"]),
    ("How VPN access works", "Request VPN access in the IT portal; it is granted for your laptop only, needs"
     " hardware-key login and is revoked automatically after 90 days without use.",
     ["vpn", "laptop", "hardware key", "access", "it portal"],
     ["how do I get vpn access", "how does remote network access work", "why was my vpn revoked"]),
    ("How data retention works", "Customer records are kept for 7 years, logs for 30 days and backups for 90 days;"
     " erasure requests are completed within 30 days, and legal holds pause deletion.",
     ["retention", "logs", "backups", "erasure", "legal hold"],
     ["how long do we keep data", "how does data retention work", "what happens to logs and backups over time"]),
    ("How vendor onboarding works", "Procurement collects the security questionnaire and the DPA; legal signs"
     " the contract, finance creates the supplier record, and only then can invoices be paid.",
     ["vendor", "procurement", "contract", "supplier", "invoice"],
     ["how do we onboard a new vendor", "what is needed before a supplier can be paid", "how does procurement work"]),
    ("How feature flags work", "Flags live in the flag service; new flags default off, ramp by percentage, and"
     " must be removed within 60 days of reaching 100% or the owner gets a cleanup ticket.",
     ["flag", "ramp", "percentage", "cleanup", "toggle"],
     ["how do feature flags work", "how do I ramp a feature gradually", "when must flags be removed"]),
    ("How database migrations work", "Schema changes ship as expand-then-contract migrations: add columns and"
     " backfill first, switch reads, and drop the old column one release later; each migration is reviewed by DBA.",
     ["migration", "schema", "backfill", "column", "dba"],
     ["how do database migrations work", "how do we change a table schema safely", "what is expand and contract"]),
    ("How incident reviews work", "Within five working days of a sev1 or sev2 incident the owner writes a"
     " blameless review: timeline, impact, contributing causes and action items with owners and dates.",
     ["incident", "outage", "postmortem", "sev1", "action item"],
     ["how do incident reviews work", "what goes into a postmortem", "what do we do after an outage"]),
]
PEOPLE = ["Priya", "Marcus", "Ann", "Tomasz", "Ximena", "Kenji", "Fatima", "Olu", "Greta", "Diego"]
EVENTS = ["paused", "discussed", "asked about", "complained about", "fixed", "escalated", "updated", "skipped",
          "blocked", "approved"]
WHEN = ["on Monday", "last sprint", "after the outage", "before the launch", "in the retro", "this morning"]
NAMESPACES = ["org/eng", "org/eng/infra", "org/eng/mobile", "org/ops", "org/people"]


def generate(memories_per_topic: int = 120, seed: int = 5) -> Dataset:
    rng = random.Random(seed)
    ds = Dataset("org-concepts")
    for ns in NAMESPACES:
        ds.docs[ns] = []
    ds.concepts = {"org": []}
    for t, (title, body, keywords, questions) in enumerate(TOPICS):
        slug = title.lower().replace(" ", "-")
        ds.concepts["org"].append(Doc(f"concept:{slug}", f"{title}. {body}", slug))
        for i in range(memories_per_topic):
            words = rng.sample(keywords, 2)
            text = (f"{rng.choice(PEOPLE)} {rng.choice(EVENTS)} the {words[0]} {rng.choice(WHEN)};"
                    f" {words[1]} ticket #{t * 1000 + i} is still open")
            ds.docs[rng.choice(NAMESPACES)].append(Doc(f"m{t}-{i}", text))
        for j, question in enumerate(questions):
            ds.queries.append(Query(f"{slug}#{j}", rng.choice(NAMESPACES), question,
                                    frozenset({f"concept:{slug}"}), "concepts"))
    return ds
