"""Fair sharing (halomem.admission): a principal over its share of the server waits its turn or gets
429 with Retry-After; other organisations' callers never wait for it; a body's size is its weight."""
from __future__ import annotations

import asyncio
import threading
import time

import httpx2
import pytest

from halomem.admission import COST_BYTES, Admission, Shares
from halomem.errors import RateLimitedError
from halomem.limits import MAX_BATCH, MAX_CONTENT_CHARS
from tests.conftest import make_token
from tests.serving import bearer, start_server


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def test_a_principal_over_its_share_waits_for_its_turn_and_others_do_not():
    admission = Admission(Shares(per_principal=2, per_org=3, wait=2.0))

    async def scenario() -> list[str]:
        order = []
        await admission.admit("p1", "acme/eng", 1, asyncio.sleep)
        await admission.admit("p1", "acme/eng", 1, asyncio.sleep)

        async def third() -> None:
            await admission.admit("p1", "acme/eng", 1, asyncio.sleep)
            order.append("p1 third admitted")

        waiting = asyncio.create_task(third())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # over its share: it waits
        await admission.admit("p9", "globex", 1, asyncio.sleep)  # another organisation: at once
        order.append("globex admitted")
        admission.release("p1", "acme/eng", 1)
        await asyncio.wait_for(waiting, 1.0)
        return order

    assert run(scenario()) == ["globex admitted", "p1 third admitted"]
    assert admission.held() == {"p:p1": 2, "o:acme": 2, "p:p9": 1, "o:globex": 1, "s:": 3}


def test_an_organisation_share_binds_all_its_principals_and_a_wait_ends_in_429():
    admission = Admission(Shares(per_principal=2, per_org=3, wait=0.1))

    async def scenario() -> None:
        for principal in ("a", "a", "b"):
            await admission.admit(principal, "acme/x", 1, asyncio.sleep)
        started = time.monotonic()
        with pytest.raises(RateLimitedError) as refused:
            await admission.admit("c", "acme/y", 1, asyncio.sleep)  # acme holds 3 of 3
        assert time.monotonic() - started >= 0.09 and refused.value.retry_after >= 1
        await admission.admit("d", "initech", 1, asyncio.sleep)

    run(scenario())
    assert admission.held()["o:acme"] == 3


def test_size_is_weight_but_never_more_than_a_share_and_waiting_is_bounded():
    admission = Admission(Shares(per_principal=2, per_org=3, wait=5.0, max_waiting=1))
    assert admission.cost(0) == 1 and admission.cost(COST_BYTES) == 2 and admission.cost(100 * COST_BYTES) == 2
    assert Admission(Shares(per_principal=0, per_org=0)).cost(10 * COST_BYTES) == 11

    async def scenario() -> None:
        await admission.admit("p", "o", admission.cost(6 * 1024 * 1024), asyncio.sleep)  # a maximal batch
        waiter = asyncio.create_task(admission.admit("p", "o", 1, asyncio.sleep))
        await asyncio.sleep(0.02)
        started = time.monotonic()
        with pytest.raises(RateLimitedError):  # one already waits: refused at once, no pile of waiters
            await admission.admit("p", "o", 1, asyncio.sleep)
        assert time.monotonic() - started < 1.0
        admission.release("p", "o", 2)
        await asyncio.wait_for(waiter, 1.0)

    run(scenario())
    assert admission.held() == {"p:p": 1, "o:o": 1, "s:": 1}


def test_a_server_keeps_one_principal_to_its_share_over_rest_and_mcp(api_server, kernel):
    """A maximal batch holds its principal's whole share: that principal's next request waits 0.5 s, then is refused
    (429 + Retry-After, audited), while another organisation's caller is answered meanwhile."""
    noisy = make_token(kernel, "acme/eng")
    victim = make_token(kernel, "globex", "read")
    kernel.remember("globex", "The globex badge office opens at nine")
    server = start_server(api_server.env, "--rate-limit", "0", "--in-flight", "1", "--org-in-flight", "1",
                          "--share-wait", "0.5", "--audit-heads-every", "0")
    batch = {"memories": [{"content": f"batch {i} " + "lorem ipsum dolor " * (MAX_CONTENT_CHARS // 19)}
                          for i in range(MAX_BATCH)]}
    answers: dict[str, int] = {}

    def send_batch() -> None:
        answers["batch"] = httpx2.post(server.url + "/v1/memories:batch", json=batch, headers=bearer(noisy),
                                       timeout=300).status_code

    try:
        writer = threading.Thread(target=send_batch)
        writer.start()
        refused = served = None
        deadline = time.monotonic() + 120
        while writer.is_alive() and time.monotonic() < deadline and not (refused and served):
            rest = httpx2.post(server.url + "/v1/search", json={"query": "badge"}, headers=bearer(noisy))
            mcp = httpx2.post(server.url + "/mcp", headers={**bearer(noisy), "Accept": "application/json, "
                              "text/event-stream"}, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": "search", "arguments": {"query": "badge"}}})
            if rest.status_code == 429 and mcp.status_code == 429:
                refused = (rest, mcp)
                served = httpx2.post(server.url + "/v1/search", json={"query": "badge office"},
                                     headers=bearer(victim))
            time.sleep(0.01)
        writer.join(timeout=300)
    finally:
        server.stop()
    assert answers["batch"] == 201
    assert refused, "the batch never held its principal's share while the other requests were sent"
    for response in refused:
        assert response.headers["retry-after"] == "1"
        assert response.headers["content-type"].startswith("application/problem+json")
        assert "share" in response.json()["detail"]
    assert served.status_code == 200 and served.json()["hits"][0]["content"].startswith("The globex badge")
    from tests.test_pipeline import audit_rows

    details = [row.detail for row in audit_rows(kernel)]
    assert any("refused kind=rate-limited" in d for d in details), details


def test_bulk_embedding_runs_at_a_lower_priority_in_its_own_thread():
    import os

    from halomem.embed.low_priority import BULK_CHARS, run_bulk

    def where() -> tuple[int, int]:
        tid = threading.get_native_id()
        return tid, os.getpriority(os.PRIO_PROCESS, tid)

    here = where()
    assert run_bulk(where, 10) == here  # a small embedding runs where it is
    tid, niceness = run_bulk(where, BULK_CHARS + 1)
    assert tid != here[0] and niceness >= min(19, here[1] + 1)
    assert where() == here  # the caller's own priority is untouched

    def fails() -> None:
        raise ValueError("the embedder's own error")

    with pytest.raises(ValueError, match="own error"):
        run_bulk(fails, BULK_CHARS + 1)


def test_a_principal_over_its_share_defers_to_callers_within_theirs_but_not_for_ever():
    from halomem.admission import ACTIVE_GAP, DEFER_MAX

    admission = Admission(Shares(per_principal=1, per_org=0, wait=5.0))

    async def scenario() -> None:
        await admission.admit("flood", "acme/eng", 1, asyncio.sleep)
        waiting = asyncio.create_task(admission.admit("flood", "acme/eng", 1, asyncio.sleep))  # over its share
        await asyncio.sleep(0.01)  # it waits
        await admission.admit("victim", "globex", 1, asyncio.sleep)  # within its share: at once
        admission.release("flood", "acme/eng", 1)
        await asyncio.sleep(DEFER_MAX / 4)
        assert not waiting.done()  # its slot is free, but the victim is being served
        admission.release("victim", "globex", 1)
        started = time.monotonic()
        await asyncio.wait_for(waiting, 1.0)  # the victim is gone: the flood goes on
        assert time.monotonic() - started < DEFER_MAX
        admission.release("flood", "acme/eng", 1)

        await admission.admit("flood", "acme/eng", 1, asyncio.sleep)
        await admission.admit("victim", "globex", 1, asyncio.sleep)  # and this one stays in flight
        late = asyncio.create_task(admission.admit("flood", "acme/eng", 1, asyncio.sleep))
        await asyncio.sleep(0.05)
        admission.release("flood", "acme/eng", 1)
        started = time.monotonic()
        await asyncio.wait_for(late, DEFER_MAX * 4)  # deference is bounded: it goes ahead anyway
        assert time.monotonic() - started >= DEFER_MAX / 2 - ACTIVE_GAP

    run(scenario())


def test_bulk_work_pauses_between_chunks_while_another_caller_is_served():
    from halomem.admission import BULK_YIELD
    from halomem.embed.low_priority import CHUNK_TEXTS, embed_in_chunks, yielding

    admission = Admission(Shares(per_principal=1, per_org=0))
    pause = admission.bulk_pause("writer")
    time.sleep(0.02)
    started = time.monotonic()
    pause()  # nobody else is served: no wait
    assert time.monotonic() - started < 0.01

    async def victim_arrives() -> None:
        await admission.admit("victim", "globex", 1, asyncio.sleep)

    run(victim_arrives())
    time.sleep(0.02)  # the bulk work "worked" 20 ms
    started = time.monotonic()
    pause()  # the victim is in flight: it waits, but no longer than BULK_YIELD x 20 ms (and some)
    waited = time.monotonic() - started
    assert 0.02 * BULK_YIELD * 0.8 <= waited <= 0.02 * BULK_YIELD + 0.05

    calls: list[str] = []
    chunks: list[int] = []
    with yielding(lambda: calls.append("pause")):
        out = embed_in_chunks(lambda texts: (chunks.append(len(texts)), list(texts))[1], [str(i) for i in range(5)])
    assert out == ["0", "1", "2", "3", "4"] and max(chunks) <= CHUNK_TEXTS
    assert len(calls) == len(chunks) - 1  # a pause between two chunks, never before the first
    assert embed_in_chunks(lambda texts: [len(texts)], ["a", "b", "c"]) == [3]  # no pause to take: one call


def test_tokens_a_principal_mints_share_its_share_and_its_rate(api_server, kernel):
    """A principal that mints child tokens does not multiply its share: a maximal batch of the root
    holds the share its children would use (429 for them), their requests draw on one bucket, and a
    caller of another lineage is served meanwhile."""
    root = make_token(kernel, "acme/eng", "read,write,admin")
    other = make_token(kernel, "acme/eng", "read")  # the same namespace, its own lineage
    kernel.remember("acme/eng", "The acme badge office opens at nine")
    server = start_server(api_server.env, "--rate-limit", "0", "--in-flight", "1", "--org-in-flight", "4",
                          "--share-wait", "0.3", "--audit-heads-every", "0")
    try:
        children = []
        for i in range(3):
            made = httpx2.post(server.url + "/v1/tokens/acme/eng", headers=bearer(root),
                               json={"name": f"child-{i}", "scopes": ["read", "write"]})
            assert made.status_code == 201
            children.append(made.json()["token"])
        grandchild = httpx2.post(server.url + "/v1/tokens/acme/eng", headers=bearer(children[0]),
                                 json={"name": "grandchild", "scopes": ["read"]})
        assert grandchild.status_code == 403  # a write token cannot mint; the lineage is the admin's
        batch = {"memories": [{"content": f"batch {i} " + "lorem ipsum dolor " * (MAX_CONTENT_CHARS // 19)}
                              for i in range(MAX_BATCH)]}
        answers: dict[str, int] = {}
        writer = threading.Thread(target=lambda: answers.update(batch=httpx2.post(
            server.url + "/v1/memories:batch", json=batch, headers=bearer(children[2]), timeout=300).status_code))
        writer.start()
        refused, served = [], []
        deadline = time.monotonic() + 120
        while writer.is_alive() and time.monotonic() < deadline and not (len(refused) >= 2 and served):
            for child in (root, children[0], children[1]):
                r = httpx2.post(server.url + "/v1/search", json={"query": "badge"}, headers=bearer(child))
                if r.status_code == 429:
                    refused.append(r)
            if refused and not served:
                served.append(httpx2.post(server.url + "/v1/search", json={"query": "badge office"},
                                          headers=bearer(other)))
        writer.join(timeout=300)
    finally:
        server.stop()
    assert answers.get("batch") == 201
    assert len(refused) >= 2 and all(r.headers["retry-after"] for r in refused)
    assert served and served[0].status_code == 200 and served[0].json()["hits"]
    with_bucket = start_server(api_server.env, "--rate-limit", "1", "--burst", "2", "--audit-heads-every", "0")
    try:
        statuses = [httpx2.get(with_bucket.url + "/v1/whoami", headers=bearer(t)).status_code
                    for t in (root, *children)]
    finally:
        with_bucket.stop()
    assert statuses.count(429) >= 2, statuses  # four tokens of one lineage, one bucket of two


def test_no_standing_mcp_streams_are_offered(api_server, kernel):
    token = make_token(kernel, "acme/eng", "read")
    headers = {**bearer(token), "Accept": "text/event-stream"}
    with httpx2.Client(base_url=api_server.url, timeout=10) as http:
        for method in ("GET", "DELETE"):
            answered = [http.request(method, "/mcp", headers=headers) for _ in range(20)]
            assert {r.status_code for r in answered} == {405}
            assert all(r.headers["allow"] == "POST" and r.headers["content-type"].startswith("application/problem")
                       for r in answered)
        listed = http.post("/mcp", headers={**bearer(token), "Accept": "application/json, text/event-stream"},
                           json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert listed.status_code == 200 and listed.json()["result"]["tools"]


def test_the_server_keeps_a_reserve_however_many_organisations_call():
    """Every caller together holds at most ``per_server`` units: the rest of the database pool stays
    for the server's own work, whatever the number of principals and organisations."""
    admission = Admission(Shares(per_principal=1, per_org=1, per_server=3, wait=0.1))

    async def scenario() -> None:
        for org in ("a", "b", "c"):
            await admission.admit(f"p-{org}", org, 1, asyncio.sleep)
        with pytest.raises(RateLimitedError):
            await admission.admit("p-d", "d", 1, asyncio.sleep)  # a fourth organisation waits, then 429
        admission.release("p-a", "a", 1)
        await admission.admit("p-d", "d", 1, asyncio.sleep)

    run(scenario())
    assert admission.held()["s:"] == 3
