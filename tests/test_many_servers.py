"""Several `halomem serve` processes on one database behave as one service: a revocation made
through one is refused by the other at once, and a rolling restart under load (SIGTERM one server
at a time, start it again) loses no acknowledged write."""
from __future__ import annotations

import threading
import time

import httpx2

from tests.conftest import count, make_token
from tests.serving import bearer, start_server

ARGS = ("--rate-limit", "0", "--audit-heads-every", "0", "--no-access-log")


def test_revocation_through_one_server_applies_on_the_other(kernel, api_server):
    other = start_server(api_server.env, *ARGS)
    try:
        admin = make_token(kernel, "acme", "read,admin")
        agent = make_token(kernel, "acme/eng", "read")
        assert httpx2.get(other.url + "/v1/whoami", headers=bearer(agent)).status_code == 200
        assert httpx2.delete(api_server.url + f"/v1/tokens/{agent[3:19]}", headers=bearer(admin)).status_code == 200
        assert httpx2.get(other.url + "/v1/whoami", headers=bearer(agent)).status_code == 401
    finally:
        other.stop()


def test_a_rolling_restart_under_load_loses_no_acknowledged_write(kernel, api_server):
    servers = [start_server(api_server.env, *ARGS) for _ in range(2)]
    token = make_token(kernel, "acme/roll", "read,write")
    acknowledged: list[str] = []
    lock, stop = threading.Lock(), threading.Event()

    def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            server = servers[(n + i) % 2]  # a balancer's round robin; a refused connection goes to the other
            i += 1
            try:
                r = httpx2.post(server.url + "/v1/memories", headers=bearer(token),
                                json={"content": f"rolling write {n}-{i}"}, timeout=30)
            except httpx2.HTTPError:
                continue
            if r.status_code == 201:
                with lock:
                    acknowledged.append(r.json()["id"])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        for index in range(2):  # one at a time: stop (SIGTERM, drain), start again on the same port
            time.sleep(1.0)
            old = servers[index]
            old.stop()
            assert old.proc.returncode in (0, 143)
            servers[index] = start_server(api_server.env, *ARGS, port=old.port)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
        for server in servers:
            server.stop()
    assert len(acknowledged) > 20
    stored = count(kernel, "SELECT count(*) FROM memories WHERE namespace = 'acme/roll' AND id IN ("
                           + ",".join(f"'{i}'" for i in acknowledged) + ")")
    assert stored == len(acknowledged)  # every write that got its 201 is there
