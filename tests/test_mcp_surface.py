"""What an agent's model sees over MCP, with the SDK's own client on a real server: tools offered per
scope with titles and annotations, typed results that validate against the published output
schemas beside a compact text, and input schemas that accept exactly what the server accepts."""
from __future__ import annotations

import random

import httpx2
import jsonschema
import pytest

from halomem import __version__
from tests.conftest import make_token
from tests.mcp_client import McpSession

READ_TOOLS = {"search", "get", "recent", "history", "entities", "concepts"}
WRITE_TOOLS = {"remember", "remember_many", "remember_conversation", "supersede", "erase"}


@pytest.fixture()
def session_for(api_server, kernel):
    opened = []

    def open_session(ns: str = "acme/eng", scopes: str = "read,write") -> McpSession:
        session = McpSession(api_server.url, make_token(kernel, ns, scopes))
        opened.append(session)
        return session

    yield open_session
    for session in opened:
        session.close()


def test_tools_are_offered_per_scope_with_titles_annotations_and_schemas(session_for, api_server, kernel):
    offered = {scopes: {t.name: t for t in session_for(scopes=scopes).list_tools()}
               for scopes in ("read", "write", "read,write")}
    assert set(offered["read"]) == READ_TOOLS | {"whoami", "feedback"}
    assert set(offered["write"]) == WRITE_TOOLS | {"whoami"}
    assert set(offered["read,write"]) == READ_TOOLS | WRITE_TOOLS | {"whoami", "feedback"}
    for name, tool in offered["read,write"].items():
        assert tool.title and tool.description and tool.output_schema, name
        assert tool.input_schema["additionalProperties"] is False, name
        for prop, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), (name, prop)
        hints = tool.annotations
        assert hints.read_only_hint == (name in READ_TOOLS | {"whoami"}), name
        assert hints.destructive_hint == (name == "erase") and hints.open_world_hint is False, name
    search = offered["read"]["search"].input_schema["properties"]
    assert (search["k"]["minimum"], search["k"]["maximum"]) == (1, 200) and search["query"]["maxLength"] == 4096
    init = httpx2.post(api_server.url + "/mcp", headers={"Accept": "application/json, text/event-stream",
                                                         "Authorization": "Bearer " + make_token(kernel, "acme")},
                       json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                           "protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}})
    assert init.json()["result"]["serverInfo"]["version"] == __version__


def test_every_tool_answers_typed_content_and_a_text_for_the_model(session_for, kernel):
    kernel.remember("acme", "The company retreat is in Lisbon in May", source="hr")
    kernel.add_entity("acme", "Priya Raman", ["Priya"])
    kernel.put_concept("acme", "glossary/retreat", "The retreat: a yearly offsite for everyone")
    session = session_for()
    tools = {t.name: t for t in session.list_tools()}
    calls = [("remember", {"content": "Deploys go through ArgoCD canaries", "source": "runbook"})]
    ok, made, _ = session.call_with_text(*calls[0])
    assert ok
    calls += [("search", {"query": "deploys canaries retreat", "k": 5}), ("get", {"id": made["id"]}),
              ("recent", {"limit": 1}), ("history", {"id": made["id"]}), ("whoami", {}), ("entities", {}),
              ("concepts", {"query": "retreat offsite"}),
              ("remember_many", {"memories": [{"content": "On-call hands over on Mondays"},
                                              {"content": "Backups run nightly", "source": "ops"}]}),
              ("supersede", {"id": made["id"], "content": "Deploys now use Flux"})]
    texts = {}
    for name, args in calls:
        ok, structured, text = session.call_with_text(name, args)
        assert ok, (name, structured)
        jsonschema.validate(structured, tools[name].output_schema)
        assert text and "{" not in text.splitlines()[0], (name, text)  # prose for a model, not JSON
        texts[name] = (structured, text)
    found, text = texts["search"]
    assert found["hits"][0]["valid_from"] and all(len(str(h["score"])) <= 6 for h in found["hits"])
    assert text.startswith(f"{len(found['hits'])} hits for") and "ago" in text or "just now" in text
    me, text = texts["whoami"]
    assert me["reads"] == ["acme", "acme/eng"] and "acme/eng" in text
    page, _ = texts["recent"]
    assert len(page["memories"]) == 1 and page["next_cursor"]
    ok, second = session.call("recent", {"limit": 1, "cursor": page["next_cursor"]})
    assert ok and second["memories"][0]["id"] != page["memories"][0]["id"]
    ok, erased, text = session.call_with_text("erase", {"id": texts["supersede"][0]["id"]})
    assert ok and erased["erased"] in text


def test_a_refusal_is_one_readable_line(session_for):
    session = session_for(scopes="read")
    ok, text = session.call("remember", {"content": "x"})  # not offered to a read token, refused if called
    assert not ok and text.startswith("permission denied:") and "\n" not in text
    ok, text = session.call("search", {"query": "x", "k": 500})
    assert not ok and text == "invalid input: k: Input should be less than or equal to 200"
    ok, text = session.call("get", {"id": "m_nothere"})
    assert not ok and text.startswith("not found:") and "\n" not in text


# --- the contract: the published input schema accepts exactly what the server accepts -----------
VALID = {
    "search": {"query": "deploys", "k": 5, "token_budget": 500, "sources": ["runbook"], "driver": "keyword"},
    "get": {"id": "{id}"}, "recent": {"limit": 5, "sources": ["runbook"]}, "history": {"id": "{id}"},
    "whoami": {}, "entities": {}, "concepts": {"query": "deploys", "k": 3},
    "remember": {"content": "A fact", "source": "runbook"},
    "remember_many": {"memories": [{"content": "A fact"}, {"content": "Another", "source": "s"}]},
    "supersede": {"id": "{id2}", "content": "A new version", "source": "runbook"},
    "erase": {"id": "{id3}", "reason": "a deletion request"},
    "feedback": {"request_id": "0" * 32, "ref": "{id}", "verdict": "helpful", "note": "spot on"},
}
BAD_VALUES = [True, "3", 3.5, None, [], {}, "", " \t", "a\x00b", "x" * 70_000, 0, -1, 10**7, "ok\x01"]


def mutations(rng: random.Random, name: str, args: dict) -> list[dict]:
    """Arguments around the valid ones: each property replaced by odd values, removed, or joined by
    an undeclared one (the kinds of mistakes models and clients make)."""
    out = [dict(args), {**args, "namespace": "other/org"}, {**args, "extra": 1}]
    for prop in args:
        out.append({k: v for k, v in args.items() if k != prop})
        for value in rng.sample(BAD_VALUES, 8):
            out.append({**args, prop: value})
    return out


def test_input_schemas_accept_exactly_what_the_server_accepts(session_for, kernel):
    session = session_for()
    ids = {f"{{{name}}}": kernel.remember("acme/eng", f"Deploys fact {name}", source="runbook").id
           for name in ("id", "id2", "id3")}
    tools = {t.name: t for t in session.list_tools()}
    rng = random.Random(26)
    checked = 0
    for name, template in VALID.items():
        args = {k: (ids.get(v, v) if isinstance(v, str) else v) for k, v in template.items()}
        validator = jsonschema.Draft202012Validator(tools[name].input_schema)
        for candidate in mutations(rng, name, args):
            schema_ok = validator.is_valid(candidate)
            ok, payload = session.call(name, candidate)
            refused_arguments = not ok and payload.startswith("invalid input:")
            assert schema_ok == (not refused_arguments), (name, repr(candidate)[:200], payload if not ok else "ok")
            checked += 1
    print(f"\nMCP input contract: {checked} generated argument sets, schema and server agree on each")
    assert checked > 150
