"""A formation run on a generated conversation set with the scripted model (tests/scripted_llm.py):
facts written, updates superseded, failures retried, and the audit rows it left. For the issue
note; run: .venv/bin/python tools/formation_demo.py (a scratch home, the embedded server, hash
embedder unless HALOMEM_EMBEDDER says otherwise)."""
from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from halomem.config import Settings  # noqa: E402
from halomem.kernel import Kernel  # noqa: E402
from halomem.ops import for_operator  # noqa: E402
from tests.scripted_llm import Reply, ScriptedLLM, candidates_of, new_fact_of, turns_of  # noqa: E402

PEOPLE = ["Priya", "Tom", "Aiko", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana"]
CITIES = ["Paris", "Lisbon", "Oslo", "Nairobi", "Osaka", "Denver", "Porto", "Riga"]
TEAMS = ["billing", "search", "payments", "platform", "mobile", "data"]


def conversations(seed: int = 7, sessions: int = 40) -> list[dict]:
    """Stand-ups: each session a few people saying where they live or which team they joined (values
    change over time: the updates), with small talk between."""
    rng = random.Random(seed)
    lines = []
    for s in range(sessions):
        for _ in range(rng.randint(3, 6)):
            who = rng.choice(PEOPLE)
            said = rng.choice([f"I moved to {rng.choice(CITIES)} last month.", f"I joined the {rng.choice(TEAMS)} team.",
                               "Morning all, nothing new from me.", "The coffee machine is broken again."])
            lines.append({"session": f"standup-{s:03d}", "speaker": who, "content": said})
    return lines


def model(fail_every: int):  # noqa: ANN201
    """Facts: 'X lives in C' / 'X is on the T team' from each turn that says so; an update supersedes
    the candidate about the same person and the same kind of fact. With ``fail_every``, of every
    that many sessions one is answered in prose (malformed, asked twice: the session fails) and one
    with HTTP 500."""
    def script(request: dict, schema: str) -> Reply:
        if schema == "halomem_facts":
            session = int(request["messages"][-1]["content"].split("standup-")[1][:3])
            if fail_every and session % fail_every == 1:
                return Reply("Sure! Here are the facts from the stand-up: ...")
            if fail_every and session % fail_every == 4:
                return Reply(status=500)
            facts = []
            for number, said in turns_of(request).items():
                who, text = said.split(": ", 1)
                if "moved to" in text:
                    facts.append({"content": f"{who} lives in {text.split('moved to ')[1].split()[0]}", "turns": [number]})
                elif "joined the" in text:
                    facts.append({"content": f"{who} is on the {text.split('joined the ')[1].split()[0]} team",
                                  "turns": [number]})
            return Reply(json.dumps({"facts": facts}), usage={"prompt_tokens": 40 * len(turns_of(request)),
                                                              "completion_tokens": 15 * len(facts) + 5})
        fact = new_fact_of(request)
        kind = "lives" if " lives in " in fact else "team"
        same = [i for i, text in candidates_of(request).items()
                if text.split()[0] == fact.split()[0] and (" lives in " in text) == (kind == "lives")]
        decision = {"action": "supersede", "target": same[0]} if same else {"action": "add", "target": None}
        return Reply(json.dumps(decision), usage={"prompt_tokens": 60, "completion_tokens": 8})

    return script


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="halomem-formation-", dir="/tmp"))
    embedder = os.environ.get("HALOMEM_EMBEDDER", "hash")
    lines = conversations()
    body = "\n".join(json.dumps(line) for line in lines).encode()
    with ScriptedLLM(model(fail_every=6)) as flaky, ScriptedLLM(model(fail_every=0)) as healthy:
        with Kernel.boot(Settings(home=home, embedder=embedder, llm_url=flaky.url, llm_model="scripted-1",
                                  llm_retries=0)) as kernel:
            ops = for_operator(kernel, "acme/eng")
            started = time.monotonic()
            report = ops.ingest_bytes(body, fmt="chat", label="standups.jsonl", extract=True)
            first_s = time.monotonic() - started
            ex = report.extraction
            print(f"turns written: {report.written} of {len(lines)}; sessions: {len(ex.extracted)} extracted, "
                  f"{len(ex.failed)} failed ({dict(Counter(f.kind for f in ex.failed))}); {first_s:.1f} s")
            print(f"facts written: {sum(len(s.facts) for s in ex.extracted)}, superseding: "
                  f"{sum(len(s.superseded) for s in ex.extracted)}, already held: {sum(s.unchanged for s in ex.extracted)}; "
                  f"model calls so far: {sum(d['calls'] for d in ops.usage(1))}")
            kernel.settings = Settings(home=home, embedder=embedder, llm_url=healthy.url, llm_model="scripted-1")
            kernel._chat_model = None
            retried = ops.extract(retry=True)
            print(f"retry: {len(retried.extracted)} sessions extracted, {len(retried.failed)} failed; facts "
                  f"{sum(len(s.facts) for s in retried.extracted)}, superseding "
                  f"{sum(len(s.superseded) for s in retried.extracted)}; model calls so far: "
                  f"{sum(d['calls'] for d in ops.usage(1))}")
            print(f"retry again: {ops.extract(retry=True).to_dict()}")
            rows = kernel.audit_tail(5000)
            actions = Counter((r.action, r.fields.get("outcome")) for r in rows if r.action in ("model", "extract"))
            print("audit rows:", dict(sorted(actions.items())))
            print("usage:", json.dumps(ops.usage(1)))
            for row in [r for r in rows if r.action == "model" and r.fields.get("purpose") == "halomem_facts"][:1] + \
                    [r for r in rows if r.action == "model" and r.fields.get("action") == "supersede"][:1] + \
                    [r for r in rows if r.action == "model" and r.fields.get("outcome") == "malformed"][:1] + \
                    [r for r in rows if r.action == "model" and r.fields.get("outcome") == "failed"][:1] + \
                    [r for r in rows if r.action == "extract" and r.fields.get("outcome") == "failed"][:2]:
                print(f"  #{row.seq} {row.detail}")
            live = [m for m in kernel.recent("acme/eng", limit=100).memories if (m.source or "").startswith("facts:")]
            chain = next((m for m in live if m.supersedes), None)
            if chain is not None:
                print("a chain:", " -> ".join(f"{r.content!r}" for r in kernel.history("acme/eng", chain.id)))
    from halomem.db import embedded

    embedded.stop(home)


if __name__ == "__main__":
    main()
