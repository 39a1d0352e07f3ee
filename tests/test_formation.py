"""Formation: facts extracted by the team's chat model (a scripted OpenAI-compatible server on
127.0.0.1 speaking the real protocol), written through the one write path, updates superseding only
what the model was shown, every call audited, nothing said lost whatever the model answers."""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import replace

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from halomem.ops import for_operator
from tests.conftest import count, make_token
from tests.scripted_llm import Reply, ScriptedLLM, candidates_of, new_fact_of, turns_of

KEY = "sk-scripted-secret-4242"


def chat(*turns: tuple[str, str, str]) -> bytes:
    return "\n".join(json.dumps({"session": s, "speaker": who, "content": text}) for s, who, text in turns).encode()


def facts_for(keyword: str):  # noqa: ANN201 - a script
    """A well-behaved model: one fact per turn holding ``keyword``; a new fact about the same person
    (its third word) supersedes the candidate about them, else it is added."""
    def script(request: dict, schema: str) -> Reply:
        if schema == "halomem_facts":
            facts = [{"content": f"Noted: {said.split(': ', 1)[1]}", "turns": [n]}
                     for n, said in turns_of(request).items() if keyword in said]
            return Reply(json.dumps({"facts": facts}), usage={"prompt_tokens": 50, "completion_tokens": 10})
        who = new_fact_of(request).split()[1]
        same = [i for i, text in candidates_of(request).items() if text.split()[1] == who]
        decision = {"action": "supersede", "target": same[0]} if same else {"action": "add", "target": None}
        return Reply(json.dumps(decision), usage={"prompt_tokens": 30, "completion_tokens": 5})
    return script


@contextmanager
def chat_model(kernel, llm: ScriptedLLM, **options):  # noqa: ANN001, ANN003
    """The kernel with the scripted model as its chat model (HALOMEM_LLM_*), for the test's length."""
    before = kernel.settings
    kernel.settings = replace(before, llm_url=llm.url, llm_model="scripted-1", **options)
    kernel._chat_model = None
    try:
        yield for_operator(kernel, "acme/a")
    finally:
        if kernel._chat_model is not None:
            kernel._chat_model.close()
        kernel.settings, kernel._chat_model = before, None


def rows(kernel, ns: str = "acme/a") -> list[sa.Row]:  # noqa: ANN001
    with kernel.engine.connect() as conn:
        return conn.execute(sa.text("SELECT id, content, source, provenance, t_valid_to, superseded_by, key FROM memories"
                                    " WHERE namespace = :ns ORDER BY t_valid_from, id"), {"ns": ns}).all()


def audit_rows(kernel, action: str) -> list[dict]:  # noqa: ANN001
    return [r.fields for r in kernel.audit_tail(500, action)]


def test_facts_rest_on_turns_and_every_call_is_audited(kernel, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("HALOMEM_LLM_API_KEY", KEY)
    with ScriptedLLM(facts_for("lives")) as llm, chat_model(kernel, llm) as ops:
        report = ops.ingest_bytes(chat(("s1", "Alice", "Hello Bob"), ("s1", "Alice", "Alice lives in Paris"),
                                       ("s1", "Bob", "Bob lives in Rome")), fmt="chat", label="c.jsonl", extract=True)
        request = llm.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["headers"]["authorization"] == f"Bearer {KEY}"
    assert request["json"]["response_format"]["json_schema"]["name"] == "halomem_facts"
    assert request["json"]["model"] == "scripted-1"
    [done] = report.extraction.extracted
    assert report.written == 3 and len(done.facts) == 2 and report.extraction.failed == []
    by_id = {r.id: r for r in rows(kernel)}
    turns = sorted((r for r in by_id.values() if r.source == "session:s1"), key=lambda r: r.provenance["turn"])
    assert len(turns) == 3 and all(r.t_valid_to is None for r in turns)  # the raw turns are kept
    fact = by_id[done.facts[0]]
    assert fact.source == "facts:s1" and fact.key is None and fact.content == "Noted: Alice lives in Paris"
    assert fact.provenance["session"] == "s1" and fact.provenance["turns"] == [2]
    assert fact.provenance["model"] == "scripted-1"
    assert by_id[fact.provenance["turn_ids"][0]].content == "Alice: Alice lives in Paris"
    call = next(r for r in audit_rows(kernel, "model") if r["purpose"] == "halomem_facts")
    assert call["outcome"] == "ok" and call["model"] == "scripted-1" and call["first_turn"] == turns[0].id
    assert (call["tokens_in"], call["tokens_out"]) == (50, 10) and sorted(call["facts"]) == sorted(done.facts)
    assert call["ms"] >= 0 and audit_rows(kernel, "extract")[0]["outcome"] == "ok"
    assert len(audit_rows(kernel, "model")) == done.calls == len(llm.requests)  # one row per call
    with kernel.engine.connect() as conn:  # the key is sent as the bearer token, never stored
        assert conn.execute(sa.text("SELECT count(*) FROM audit_log WHERE fields::text LIKE :k"),
                            {"k": f"%{KEY}%"}).scalar_one() == 0
    assert ops.usage(1)[0]["tokens_in"] == done.tokens_in  # usage reads the same rows
    # the same file again: no session has a new turn, nothing is asked
    with ScriptedLLM(facts_for("lives")) as llm, chat_model(kernel, llm) as ops:
        again = ops.ingest_bytes(chat(("s1", "Alice", "Hello Bob"), ("s1", "Alice", "Alice lives in Paris"),
                                      ("s1", "Bob", "Bob lives in Rome")), fmt="chat", label="c.jsonl", extract=True)
        assert llm.requests == [] and again.extraction.extracted == [] and again.written == 0


def test_an_update_supersedes_and_history_keeps_the_old_fact(kernel) -> None:  # noqa: ANN001
    with ScriptedLLM(facts_for("lives")) as llm, chat_model(kernel, llm) as ops:
        first = ops.ingest_bytes(chat(("s1", "Alice", "Alice lives in Paris")), fmt="chat", extract=True)
        second = ops.ingest_bytes(chat(("s2", "Alice", "Alice lives in Berlin now")), fmt="chat", extract=True)
        shown = list(candidates_of(llm.calls("halomem_update")[0]["json"]))
    old = first.extraction.extracted[0].facts[0]
    [(closed, new)] = second.extraction.extracted[0].superseded
    assert closed == old and shown[0] == old
    history = ops.history(new)
    assert [r.content for r in history] == ["Noted: Alice lives in Paris", "Noted: Alice lives in Berlin now"]
    assert history[0].t_valid_to is not None and history[1].t_valid_to is None
    update = [r for r in audit_rows(kernel, "model") if r["purpose"] == "halomem_update"]
    assert update[0]["action"] == "supersede" and update[0]["superseded"] == [old]


def test_refused_proposals_write_nothing_and_the_session_can_be_retried(kernel, cli, cli_env) -> None:  # noqa: ANN001
    foreign = for_operator(kernel, "acme/b").remember("Alice lives in Lisbon").id
    with ScriptedLLM(facts_for("lives")) as llm, chat_model(kernel, llm) as ops:
        ops.ingest_bytes(chat(("s1", "Alice", "Alice lives in Paris")), fmt="chat", extract=True)

    def liar(request: dict, schema: str) -> Reply:
        if schema == "halomem_facts":  # one fact cites a turn the session does not have
            return Reply(json.dumps({"facts": [{"content": "Alice lives in Oslo", "turns": [1]},
                                               {"content": "Bob owns a boat", "turns": [7]}]}))
        return Reply(json.dumps({"action": "supersede", "target": foreign}))  # a memory it was not shown

    with ScriptedLLM(liar) as llm, chat_model(kernel, llm) as ops:
        report = ops.ingest_bytes(chat(("s2", "Alice", "Alice moved to Oslo")), fmt="chat", extract=True)
    [failed] = report.extraction.failed
    assert failed.session == "s2" and failed.kind == "malformed" and "shown" in failed.reason
    assert len(llm.calls("halomem_update")) == 2  # asked once more, then refused
    assert all(r.t_valid_to is None for r in rows(kernel, "acme/b"))
    assert all(r.t_valid_to is None for r in rows(kernel))  # nothing closed, in any namespace
    assert [r["outcome"] for r in audit_rows(kernel, "model")][-3:] == ["malformed", "malformed", "ok"]
    # the retry, now with a model that behaves: the failed session only (exit 0, JSON on stdout)
    with ScriptedLLM(facts_for("Oslo")) as llm:
        env = {"HALOMEM_LLM_URL": llm.url, "HALOMEM_LLM_MODEL": "scripted-1"}
        result = cli("extract", "--retry", "--ns", "acme/a", "--json", env=env)
        assert result.returncode == 0, result.stderr
        done = json.loads(result.stdout)
        assert [s["session"] for s in done["extracted"]] == ["s2"] and done["failed"] == []
        assert len(done["extracted"][0]["superseded"]) == 1
        again = cli("extract", "--retry", "--ns", "acme/a", "--json", env=env)
        assert json.loads(again.stdout) == {"extracted": [], "failed": []}


def test_a_fact_citing_a_missing_turn_is_refused_alone(kernel) -> None:  # noqa: ANN001
    def script(request: dict, schema: str) -> Reply:
        return Reply(json.dumps({"facts": [{"content": "Carol leads the platform team", "turns": [1]},
                                           {"content": "Dan likes tea", "turns": [1, 9]},
                                           {"content": "Erin is new", "turns": []},
                                           {"content": "   ", "turns": [1]}, "not a fact"]}))

    with ScriptedLLM(script) as llm, chat_model(kernel, llm) as ops:
        report = ops.ingest_bytes(chat(("s1", "Carol", "I lead the platform team")), fmt="chat", extract=True)
    [done] = report.extraction.extracted
    assert len(done.facts) == 1 and len(done.refused) == 4
    assert "turn 9" in done.refused[0] and "cites no turn" in done.refused[1]


@pytest.mark.parametrize("reply, kind", [
    (Reply("this is not JSON"), "malformed"),
    (Reply("```json\n{\"facts\": 3}\n```"), "malformed"),
    (Reply(status=500), "http-500"),
    (Reply(status=401), "http-401"),
    (Reply(body=b"<html>gateway</html>"), "not-a-completion"),
    (Reply(huge=4 << 20), "oversized"),
    (Reply(delay=3.0, text='{"facts": []}'), "timeout"),
])
def test_a_failing_model_fails_the_session_never_the_turns(kernel, cli, reply, kind, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("HALOMEM_LLM_API_KEY", KEY)
    with ScriptedLLM(lambda request, schema: reply) as llm:
        env = {"HALOMEM_LLM_URL": llm.url, "HALOMEM_LLM_MODEL": "scripted-1", "HALOMEM_LLM_API_KEY": KEY,
               "HALOMEM_LLM_TIMEOUT_S": "0.5", "HALOMEM_LLM_RETRIES": "1"}
        path = kernel.settings.home / "talk.jsonl"
        path.write_bytes(chat(("s1", "Alice", "Alice lives in Paris"), ("s2", "Bob", "Bob lives in Rome")))
        result = cli("ingest", "--format", "chat", str(path), "--extract", "--ns", "acme/a", "--json", env=env)
    assert result.returncode == 19, result.stderr
    report = json.loads(result.stdout)
    assert report["written"] == 2 and [f["kind"] for f in report["extraction"]["failed"]] == [kind, kind]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("halomem: extraction failed for session") for line in lines)
    assert "Traceback" not in result.stderr and KEY not in result.stderr + result.stdout
    assert count(kernel, "SELECT count(*) FROM memories WHERE namespace = 'acme/a' AND t_valid_to IS NULL") == 2
    with kernel.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM audit_log WHERE fields::text LIKE :k"),
                            {"k": f"%{KEY}%"}).scalar_one() == 0
    failed = [r for r in audit_rows(kernel, "extract") if r["outcome"] == "failed"]
    assert len(failed) == 2 and all(r["kind"] == kind for r in failed)


def test_429_is_retried_after_its_retry_after(kernel) -> None:  # noqa: ANN001
    answers = iter([Reply(status=429, headers={"Retry-After": "0"}), Reply(json.dumps({"facts": []}))])
    with ScriptedLLM(lambda request, schema: next(answers)) as llm, chat_model(kernel, llm) as ops:
        report = ops.ingest_bytes(chat(("s1", "Alice", "hi")), fmt="chat", extract=True)
        assert len(llm.requests) == 2
    assert report.extraction.failed == [] and len(report.extraction.extracted) == 1


def test_the_daily_budget_stops_calls_and_usage_sums_them(kernel, cli) -> None:  # noqa: ANN001
    for_operator(kernel, "acme").set_policy(None, {"llm_tokens_per_day": 100})  # acme/a inherits it
    with ScriptedLLM(facts_for("never")) as llm, chat_model(kernel, llm, llm_tokens_per_day=10**6) as ops:
        report = ops.ingest_bytes(chat(("s1", "A", "one"), ("s2", "B", "two"), ("s3", "C", "three")),
                                  fmt="chat", extract=True)
        assert len(llm.requests) == 2  # 60 tokens each: the third session finds 120 spent of 100
    assert [s.session for s in report.extraction.extracted] == ["s1", "s2"]
    [failed] = report.extraction.failed
    assert failed.session == "s3" and failed.kind == "budget" and "100" in failed.reason
    result = cli("usage", "--ns", "acme", "--json")
    [day] = json.loads(result.stdout)["usage"]
    assert day["namespace"] == "acme/a" and (day["calls"], day["tokens_in"], day["tokens_out"]) == (2, 100, 20)
    assert "acme/a" in cli("usage", "--ns", "acme").stdout
    shown = cli("policy", "show", "--ns", "acme/a").stdout
    assert "model tokens a day: 100 (inherited from acme)" in shown
    for_operator(kernel, "acme/a").set_policy(None, {"llm_tokens_per_day": 0})  # none at all, nearer wins
    with ScriptedLLM(facts_for("never")) as llm, chat_model(kernel, llm) as ops:
        [failed] = ops.extract(sessions=["s1"]).failed
        assert failed.kind == "budget" and llm.requests == []
    assert cli("policy", "set", "--ns", "acme/a", "--llm-tokens-per-day", "-1").returncode in (2, 3)


def test_extraction_without_a_chat_model_is_refused_before_anything_is_written(kernel, cli) -> None:  # noqa: ANN001
    path = kernel.settings.home / "talk.jsonl"
    path.write_bytes(chat(("s1", "Alice", "hi")))
    result = cli("ingest", "--format", "chat", str(path), "--extract", "--ns", "acme/a")
    assert result.returncode == 3 and "HALOMEM_LLM_URL" in result.stderr and result.stderr.count("\n") == 1
    assert count(kernel, "SELECT count(*) FROM memories") == 0
    assert cli("ingest", str(path), "--extract", "--ns", "acme/a").returncode == 3  # not a conversation


# --- a property: whatever the model answers, no turn is lost and nothing outside the caller's own
# facts is ever closed
ANSWER = st.one_of(
    st.just(Reply("not json")),
    st.just(Reply(status=500)),
    st.builds(lambda n: Reply(json.dumps({"facts": [{"content": f"Fact {n}", "turns": [n]}]})), st.integers(-1, 5)),
    st.builds(lambda a, t: Reply(json.dumps({"action": a, "target": t})),
              st.sampled_from(["add", "supersede", "skip", "delete", None]),
              st.sampled_from(["candidate", "turn", "foreign", None, 7])),
)


@hsettings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(ANSWER, min_size=1, max_size=12))
def test_no_sequence_of_answers_loses_a_turn_or_closes_a_row_outside_the_lineage(kernel, script) -> None:  # noqa: ANN001
    kernel_ns = "acme/p"
    with kernel.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM memories WHERE namespace LIKE 'acme/%'"))
    foreign = for_operator(kernel, "acme/q").remember("Fact 1 of the sibling").id
    own = for_operator(kernel, kernel_ns)
    own.remember("Fact 2 written by hand")
    answers = iter(script)

    def model(request: dict, schema: str) -> Reply:
        reply = next(answers, Reply(json.dumps({"facts": []})))
        if reply.text and '"target"' in reply.text:
            wanted = json.loads(reply.text)
            shown = list(candidates_of(request)) if schema == "halomem_update" else []
            target = {"candidate": shown[0] if shown else None, "foreign": foreign,
                      "turn": turn_ids[0] if turn_ids else None}.get(wanted["target"], wanted["target"])
            return Reply(json.dumps({**wanted, "target": target}))
        return reply

    turn_ids: list[str] = []
    with ScriptedLLM(model) as llm, chat_model(kernel, llm, llm_retries=0) as _:
        ops = for_operator(kernel, kernel_ns)
        body = chat(*[(f"s{i % 3}", "Ann", f"Fact {i} said aloud") for i in range(6)])
        first = ops.ingest_bytes(body, fmt="chat", extract=True)
        turn_ids.extend(o.id for o in first.items)
        ops.ingest_bytes(chat(("s9", "Ann", "Fact 3 again")), fmt="chat", extract=True)
        ops.extract(retry=True)
    mine = rows(kernel, kernel_ns)
    turns = [r for r in mine if (r.source or "").startswith("session:")]
    assert len(turns) == 7 and all(r.t_valid_to is None for r in turns)  # every turn kept, live
    closed = [r for r in mine if r.t_valid_to is not None]
    # a fact the model formed, or the memory written by hand beside them (no source: a supersede may close it)
    assert all((r.source or "").startswith("facts:") or r.content == "Fact 2 written by hand" for r in closed)
    assert [r.t_valid_to for r in rows(kernel, "acme/q")] == [None]


def test_rest_and_mcp_extract_through_a_served_chat_model(kernel, api_server, monkeypatch) -> None:  # noqa: ANN001
    import httpx2

    from tests.mcp_client import McpSession
    from tests.serving import bearer, start_server

    calls = {"n": 0}

    def script(request: dict, schema: str) -> Reply:
        calls["n"] += 1
        if calls["n"] == 2:  # the second conversation's call fails, echoing the request's headers
            return Reply(status=500)
        return facts_for("lives")(request, schema)

    with ScriptedLLM(script) as llm:
        env = {**api_server.env, "HALOMEM_LLM_URL": llm.url, "HALOMEM_LLM_MODEL": "scripted-1",
               "HALOMEM_LLM_API_KEY": KEY, "HALOMEM_LLM_RETRIES": "0"}
        server = start_server(env, "--rate-limit", "0")
        try:
            token = make_token(kernel, "acme/a")
            answer = httpx2.post(f"{server.url}/v1/memories:ingest", params={"format": "chat", "extract": "true"},
                                 content=chat(("s1", "Alice", "Alice lives in Paris")), headers=bearer(token), timeout=60)
            assert answer.status_code == 201, answer.text
            [done] = answer.json()["extraction"]["extracted"]
            assert done["session"] == "s1" and len(done["facts"]) == 1
            mcp = McpSession(server.url, token)
            try:
                assert "remember_conversation" in mcp.tools()
                ok, report, text = mcp.call_with_text("remember_conversation", {
                    "session": "s2", "extract": True,
                    "messages": [{"role": "user", "name": "Bob", "content": "Bob lives in Rome"}]})
                assert ok and report["written"] == 1 and report["extraction"]["failed"][0]["kind"] == "http-500"
                assert "extraction failed (http-500)" in text and KEY not in text
            finally:
                mcp.close()
            retried = httpx2.post(f"{server.url}/v1/memories:extract", json={"retry": True}, headers=bearer(token),
                                  timeout=60)
            assert retried.status_code == 200 and [s["session"] for s in retried.json()["extracted"]] == ["s2"]
            bad = httpx2.post(f"{server.url}/v1/memories:extract", json={"sessions": ["nope"]}, headers=bearer(token))
            assert bad.status_code == 404 and bad.headers["content-type"].startswith("application/problem+json")
            usage = httpx2.get(f"{server.url}/v1/usage", headers=bearer(make_token(kernel, "acme", "read,write,admin")))
            assert usage.status_code == 200 and usage.json()["usage"][0]["calls"] == calls["n"]
            denied = httpx2.get(f"{server.url}/v1/usage", headers=bearer(token))
            assert denied.status_code == 403
            assert KEY not in server.log()
        finally:
            server.stop()


def test_erasing_a_turn_erases_the_facts_formed_from_it(kernel) -> None:  # noqa: ANN001
    with ScriptedLLM(facts_for("lives")) as llm, chat_model(kernel, llm) as ops:
        report = ops.ingest_bytes(chat(("s1", "Alice", "Alice lives in 12 Rue Cler"), ("s1", "Bob", "Bob lives in Rome")),
                                  fmt="chat", extract=True)
    by_id = {r.id: r for r in rows(kernel)}
    alice_turn = next(i for i, r in by_id.items() if r.content.startswith("Alice:"))
    facts = {by_id[f].content: f for f in report.extraction.extracted[0].facts}
    erased = ops.erase(alice_turn, reason="erasure request")
    assert set(erased.versions) == {alice_turn, facts["Noted: Alice lives in 12 Rue Cler"]}
    after = {r.id: r for r in rows(kernel)}
    assert after[facts["Noted: Alice lives in 12 Rue Cler"]].content == ""  # gone from what was made of it
    assert after[facts["Noted: Bob lives in Rome"]].content == "Noted: Bob lives in Rome"
    with kernel.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM memories WHERE content LIKE '%Rue Cler%'")).scalar_one() == 0
    [row] = [r for r in audit_rows(kernel, "erase")]
    assert row["derived"] == [facts["Noted: Alice lives in 12 Rue Cler"]]


def test_a_target_superseded_while_the_model_thought_leaves_the_fact_standing_alone(kernel) -> None:  # noqa: ANN001
    with ScriptedLLM(facts_for("lives")) as llm, chat_model(kernel, llm) as ops:
        old = ops.ingest_bytes(chat(("s1", "Alice", "Alice lives in Paris")), fmt="chat",
                               extract=True).extraction.extracted[0].facts[0]

    def racing(request: dict, schema: str) -> Reply:
        if schema == "halomem_facts":
            return facts_for("lives")(request, schema)
        for_operator(kernel, "acme/a").supersede(old, "Noted: Alice lives in Rome")  # another writer wins first
        return Reply(json.dumps({"action": "supersede", "target": old}))

    with ScriptedLLM(racing) as llm, chat_model(kernel, llm) as ops:
        report = ops.ingest_bytes(chat(("s2", "Alice", "Alice lives in Berlin")), fmt="chat", extract=True)
    [done] = report.extraction.extracted
    assert done.superseded == [] and len(done.facts) == 1 and report.extraction.failed == []
    update = [r for r in audit_rows(kernel, "model") if r["purpose"] == "halomem_update"][-1]
    assert update["action"] == "add" and update["facts"] == done.facts  # one row for the call, whatever it led to
    live = {r.content for r in rows(kernel) if r.t_valid_to is None and (r.source or "").startswith("facts:")}
    assert live == {"Noted: Alice lives in Rome", "Noted: Alice lives in Berlin"}


def test_a_session_named_twice_or_also_failed_is_extracted_once(kernel) -> None:  # noqa: ANN001
    with ScriptedLLM(lambda request, schema: Reply(status=500)) as llm, chat_model(kernel, llm, llm_retries=0) as ops:
        assert ops.ingest_bytes(chat(("s1", "Alice", "Alice lives in Paris")), fmt="chat", extract=True).extraction.failed
    with ScriptedLLM(facts_for("lives")) as llm, chat_model(kernel, llm) as ops:
        done = ops.extract(retry=True, sessions=["s1", "s1"])
        assert [s.session for s in done.extracted] == ["s1"] and len(llm.calls("halomem_facts")) == 1
