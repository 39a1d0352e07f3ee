"""Extraction: a session's facts from the chat model, each written through the one write path, an
update superseding only a memory the model was shown; one audit row per model call and one per
session (its outcome: what ``extract --retry`` reads).

A session that fails (the model unreachable, answers that stay malformed after a second ask, the
namespace's tokens for the day spent) is reported with its reason and left as the raw turns the
chat intake already stored; the facts it had written stay (nothing is undone, nothing is lost).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Sequence, TypeVar

from ..audit.usage import EXTRACT, MODEL, tokens_since
from ..errors import ConflictError, HalomemError, NotFoundError
from ..results import Extraction, SessionExtracted, SessionFailed
from ..types import Namespace
from ..write import consolidate
from . import lookups
from .chat_model import ChatModel, ModelCallFailed
from .protocol import (FACTS, FACTS_SCHEMA, UPDATE, UPDATE_SCHEMA, BadAnswer, Fact, Turn, facts_messages,
                       parse_decision, parse_facts, update_messages)

T = TypeVar("T")
ASKS = 2  # a malformed answer is asked again once; a second one fails the session
FACTS_MAX_TOKENS = 4000
UPDATE_MAX_TOKENS = 100


@dataclass(frozen=True)
class Session:
    name: str
    turns: tuple[Turn, ...]


class BudgetSpent(HalomemError):
    kind = "budget spent"
    slug = "budget"


class Formation:
    """One run of extraction over sessions of one namespace, under one request id."""

    def __init__(self, kernel: Any, model: ChatModel, ns: Namespace, request_id: str) -> None:
        """``kernel``: the Kernel (its engine, embedder, writer and audit_event; not imported here:
        the kernel composes formation, not the other way round)."""
        from ..embed.calibrate import noise_floor

        self.kernel, self.model, self.ns, self.request_id = kernel, model, ns, request_id
        policy = kernel.effective_policy(ns).llm_tokens_per_day
        self.budget = model.options.tokens_per_day if policy is None else policy
        self.floor = noise_floor(kernel.embedder)
        day = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
        with kernel.engine.connect() as conn:
            self.spent = tokens_since(conn, ns.path, day)
        self._day_ends = day + timedelta(days=1)

    def run(self, sessions: Sequence[Session]) -> Extraction:
        done = Extraction()
        for session in sessions:
            if not session.turns:
                continue
            tally = SessionExtracted(session.name)
            try:
                self._session(session, tally)
            except (ModelCallFailed, BadAnswer, BudgetSpent) as exc:
                kind = getattr(exc, "reason", exc.slug if not isinstance(exc, BadAnswer) else "malformed")
                self._record(EXTRACT, {"outcome": "failed", "kind": kind, "first_turn": session.turns[0].id,
                                       "facts": tally.facts, "calls": tally.calls})
                done.failed.append(SessionFailed(session.name, kind, str(exc)))
                continue
            self._record(EXTRACT, {"outcome": "ok", "first_turn": session.turns[0].id, "facts": tally.facts,
                                   "superseded": [old for old, _ in tally.superseded], "calls": tally.calls})
            done.extracted.append(tally)
        return done

    def _session(self, session: Session, tally: SessionExtracted) -> None:
        turns = {t.number: t for t in session.turns}
        (facts, refused), call = self._ask(FACTS, facts_messages(session.name, session.turns), FACTS_MAX_TOKENS,
                                           lambda text: parse_facts(text, turns), session, tally)
        tally.refused.extend(refused)
        written: list[str] = []
        try:
            for fact in facts:
                made = self._place(fact, session.name, turns, session, tally)
                if made:
                    written.append(made)
        finally:
            self._record(MODEL, {**call, "outcome": "ok", "facts": written, "refused": len(refused)})

    def _place(self, fact: Fact, name: str, turns: dict[int, Turn], session: Session, tally: SessionExtracted) -> str | None:
        """Write one fact (or not): the same text live is left as it is; near memories go to the model,
        which adds, supersedes one of them or skips. Returns the id written, if any."""
        ns = self.ns
        with self.kernel.engine.connect() as conn:
            if consolidate.live_with_keys(conn, ns.path, [consolidate.content_key(fact.content)]):
                tally.unchanged += 1
                return None
        [vector] = self.kernel.embedder.embed([fact.content])
        with self.kernel.engine.begin() as conn:
            shown = lookups.candidates(conn, ns.path, vector, self.floor)
        provenance = {"format": "fact", "session": name, "turns": list(fact.turns),
                      "turn_ids": [turns[n].id for n in fact.turns], "model": self.model.model}
        source = (lookups.FACTS_SOURCE + name)[:200]
        call: dict[str, Any] | None = None
        if shown:
            ids = [c.id for c in shown]
            decision, call = self._ask(UPDATE, update_messages(fact.content, shown), UPDATE_MAX_TOKENS,
                                       lambda text: parse_decision(text, ids), session, tally)
            if decision.action == "skip":
                tally.unchanged += 1
                self._record(MODEL, {**call, "outcome": "ok", "action": "skip", "facts": []})
                return None
            if decision.action == "supersede" and decision.target:
                try:
                    made = self.kernel.writer.supersede(ns, decision.target, fact.content, source=source,
                                                        provenance=provenance, request_id=self.request_id)
                except (ConflictError, NotFoundError):  # superseded or erased meanwhile: the fact stands alone
                    made = None
                if made is not None:
                    tally.facts.append(made.id)
                    tally.superseded.append((decision.target, made.id))
                    self._record(MODEL, {**call, "outcome": "ok", "action": "supersede", "facts": [made.id],
                                         "superseded": [decision.target]})
                    return made.id
        made = self.kernel.writer.remember(ns, fact.content, source=source, provenance=provenance,
                                           request_id=self.request_id)
        written = [made.id] if made.status == "created" else []
        if call is not None:  # the update call's row, with what it led to
            self._record(MODEL, {**call, "outcome": "ok", "action": "add", "facts": written})
        if not written:
            tally.unchanged += 1
            return None
        tally.facts.append(made.id)
        return made.id

    def _ask(self, purpose: str, messages: list[dict[str, str]], max_tokens: int, parse: Callable[[str], T],
             session: Session, tally: SessionExtracted) -> tuple[T, dict[str, Any]]:
        """The parsed answer and its call's audit fields (the caller records the row with what it
        wrote). A malformed answer is recorded at once and asked again, up to ASKS times."""
        schema = FACTS_SCHEMA if purpose == FACTS else UPDATE_SCHEMA
        for ask in range(1, ASKS + 1):
            self._check_budget()
            started = time.monotonic()
            base = {"purpose": purpose, "model": self.model.model, "first_turn": session.turns[0].id}
            try:
                answer = self.model.complete(messages, purpose, schema, max_tokens)
            except ModelCallFailed as exc:
                tally.calls += 1
                self._record(MODEL, {**base, "outcome": "failed", "kind": exc.reason, "tokens_in": 0, "tokens_out": 0,
                                     "ms": round((time.monotonic() - started) * 1000.0, 1)})
                raise
            tally.calls += 1
            tally.tokens_in += answer.tokens_in
            tally.tokens_out += answer.tokens_out
            self.spent += answer.tokens_in + answer.tokens_out
            call = {**base, "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out, "ms": round(answer.ms, 1)}
            try:
                return parse(answer.text), call
            except BadAnswer as exc:
                self._record(MODEL, {**call, "outcome": "malformed", "ask": ask})
                if ask == ASKS:
                    raise BadAnswer(f"the chat model's answers were malformed twice: {exc}") from None
        raise AssertionError("unreachable")

    def _check_budget(self) -> None:
        if datetime.now(timezone.utc) >= self._day_ends:  # a run past midnight: a new day's budget
            day = self._day_ends
            self._day_ends = day + timedelta(days=1)
            with self.kernel.engine.connect() as conn:
                self.spent = tokens_since(conn, self.ns.path, day)
        if self.spent >= self.budget:
            raise BudgetSpent(f"{self.ns} has spent its {self.budget} model tokens for today "
                              "(policy llm_tokens_per_day); the session is stored as turns")

    def _record(self, action: str, record: dict[str, Any]) -> None:
        self.kernel.audit_event(self.ns, action, record, self.request_id)
