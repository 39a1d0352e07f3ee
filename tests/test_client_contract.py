"""One table of operations (halomem_client.operations.OPERATIONS) holds the in-process
``Operations``, both clients and the REST API together: each operation exists everywhere with the
same parameters, and every route the server documents belongs to exactly one operation. Then the
clients themselves, sync and async, perform every operation against a live server."""
from __future__ import annotations

import asyncio
import inspect

import pytest

from halomem_client import AsyncClient, Client, InvalidInputError, NotFoundError, PermissionDeniedError
from halomem_client.operations import ALSO_ROUTED, OPERATIONS
from halomem.ops import Operations
from tests.conftest import make_token


def _parameters(fn) -> list[tuple[str, object]]:  # noqa: ANN001
    """Names, kinds and defaults, leaving out ``self`` and catch-all ``**progress``."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()
            if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda o: o.name)
def test_each_operation_has_the_same_parameters_in_process_and_in_both_clients(operation):
    client = _parameters(getattr(Client, operation.name))
    assert client == _parameters(operation.build)
    assert _parameters(getattr(AsyncClient, operation.name)) == client
    assert inspect.iscoroutinefunction(getattr(AsyncClient, operation.name))
    if operation.in_process:
        local = _parameters(getattr(Operations, operation.name))
        assert [(n, k) for n, k, _ in local] == [(n, k) for n, k, _ in client]
        assert [d for _, _, d in local] == [d for _, _, d in client]


def test_every_documented_route_is_one_operation_and_every_operation_is_routed(api_server):
    import httpx2

    document = httpx2.get(f"{api_server.url}/openapi.json").json()
    routes = {(method.upper(), path) for path, item in document["paths"].items() if path.startswith("/v1/")
              for method in item if method in ("get", "post", "put", "delete", "patch")}
    table = {(o.method, o.route) for o in OPERATIONS}
    assert len(table) == len(OPERATIONS)  # no route twice
    assert routes == table | set(ALSO_ROUTED)


def _every_operation(hm: Client, admin: Client, tmp_note: bytes) -> dict:
    """Each operation once, through ``hm`` (read, write) and ``admin``; what each answered."""
    made = hm.remember("Deploys go through ArgoCD canaries", source="runbook", provenance={"page": 3})
    seen = {"whoami": hm.whoami()["namespace"], "remember": made.status}
    seen["get"] = hm.get(made.id).content
    seen["recent"] = [m.id for m in hm.recent(limit=5).memories]
    newer = hm.supersede(made.id, "Deploys go through Flux canaries")
    seen["supersede"] = newer.id != made.id
    seen["history"] = [r.id for r in hm.history(newer.id)]
    found = hm.search("how do we deploy", k=3)
    seen["search"] = [h.id for h in found.hits]
    seen["feedback"] = hm.feedback(found.request_id, found.hits[0].ref, "helpful").verdict
    seen["remember_many"] = hm.remember_many([{"content": "Payroll runs on the 25th"},
                                              {"content": "The VPN is WireGuard", "source": "it"}]).written
    seen["ingest_bytes"] = hm.ingest_bytes(b'{"content": "On-call rotates weekly"}\n').written
    try:  # this server has no chat model (tests/test_formation.py serves one): refused, clearly
        hm.extract(retry=True)
        raise AssertionError("extraction ran without a chat model")
    except InvalidInputError as exc:
        seen["extract"] = "HALOMEM_LLM_URL" in str(exc)
    seen["upload_documents"] = [w["path"] for w in hm.upload_documents([("intro.md", tmp_note)],
                                                                       root="handbook")["written"]]
    seen["add_entity"] = hm.add_entity("ArgoCD", ["argo"]).name
    seen["entities"] = [e["name"] for e in hm.entities()]
    seen["put_concept"] = hm.put_concept("deploys/pipeline", "Deploys: ArgoCD canaries, then Flux").path
    seen["concepts"] = [c["ref"] for c in hm.concepts("deploys")]
    seen["materialize_concept"] = bool(hm.materialize_concept("deploys/pipeline").id)
    seen["effective_policy"] = hm.effective_policy()["retriever"]
    erased = hm.erase(hm.remember("A temporary note").id, reason="test")
    seen["erase"] = erased.namespace
    seen["set_policy"] = admin.set_policy(None, {"retriever": "keyword"})["retriever"]
    seen["effective_policy_admin"] = admin.effective_policy("acme/eng")["retriever"]
    seen["clear_policy"] = admin.clear_policy(None)
    seen["policy_report"] = sorted(admin.policy_report(days=1.0))
    seen["usage"] = admin.usage(days=1.0)
    seen["audit_tail"] = bool(admin.audit_tail(n=5))
    assert {r["actor_ns"] for r in admin.audit_tail(n=50, within="acme/eng")} <= {"acme/eng"}
    try:
        admin.audit_tail(n=5, within="acme/sales")  # not in the admin's subtree
        raise AssertionError("a sibling's trail was listed")
    except PermissionDeniedError:
        pass
    seen["audit_status"] = admin.audit_status()["verified"]
    seen["who_saw"] = admin.who_saw(newer.id).memory_id
    search_seq = next(r["seq"] for r in admin.audit_tail(n=50, action="search"))
    seen["replay"] = admin.replay(search_seq).seq
    seen["namespaces"] = admin.namespaces()["root"]
    exported = admin.export_namespace()
    seen["export_namespace"] = exported.splitlines()[0]
    seen["import_namespace"] = admin.import_namespace(exported.encode())["memories"]
    issued = admin.create_token("acme/eng/bots", "a bot", "read")
    seen["create_token"] = issued["token"].startswith("hm_")
    seen["list_tokens"] = issued["id"] in [t["id"] for t in admin.list_tokens()]
    seen["revoke_token"] = admin.revoke_token(issued["id"])["revoked_at"] is not None
    return seen


def test_the_sync_client_performs_every_operation(api_server, kernel):
    with Client(api_server.url, make_token(kernel, "acme/eng", "read,write")) as hm, \
            Client(api_server.url, make_token(kernel, "acme/eng", "read,write,admin")) as admin:
        seen = _every_operation(hm, admin, b"# Welcome\n\nNew joiners read the runbook first.\n")
        assert {o.name for o in OPERATIONS} <= set(seen)
        assert seen["whoami"] == "acme/eng" and seen["remember"] == "created"
        assert seen["get"] == "Deploys go through ArgoCD canaries" and len(seen["history"]) == 2
        assert seen["upload_documents"] == ["handbook/intro.md"] and seen["remember_many"] == 2
        assert seen["set_policy"] == "keyword" and seen["clear_policy"] is True and seen["audit_status"] is True
        assert seen["extract"] is True and seen["usage"] == []
        assert seen["create_token"] and seen["list_tokens"] and seen["revoke_token"]
        assert '"kind":"header"' in seen["export_namespace"] and seen["import_namespace"] == 0  # all there already
        with pytest.raises(NotFoundError):
            hm.get("m_does_not_exist")
        with pytest.raises(PermissionDeniedError):
            hm.audit_status()  # a read-write token is no admin


def test_the_async_client_performs_the_same_operations(api_server, kernel):
    token = make_token(kernel, "acme/ops", "read,write")

    async def run() -> tuple:
        async with AsyncClient(api_server.url, token) as hm:
            made = await hm.remember("The status page lives at status.acme.test")
            found = await hm.search("where is the status page")
            page = await hm.recent(limit=3)
            again = await hm.remember("The status page lives at status.acme.test")
            with pytest.raises(NotFoundError):
                await hm.get("m_does_not_exist")
            return made, found, page, again, await hm.namespace()

    made, found, page, again, own = asyncio.run(run())
    assert own == "acme/ops" and found.hits[0].id == made.id and page.memories[0].id == made.id
    assert again.status == "unchanged" and again.id == made.id
