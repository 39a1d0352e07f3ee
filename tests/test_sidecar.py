"""mem0 + sidecars on 127.0.0.1: the healthy path and every failure mode, none of which fails a search."""
import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from halomem.drivers import DriverUnavailableError
from halomem.drivers.mem0 import CANDIDATE_CAP, Mem0Driver
from halomem.drivers.view import build_scoped_view
from halomem.index import Scope
from halomem.sidecar.server import SidecarServer
from halomem.types import Namespace, RetrieverQuery
from tests.sidecar_faults import FaultySidecar


@pytest.fixture()
def corpus(kernel):
    facts = ["the glacier station logs ice core depth daily", "the glacier cafe serves cardamom buns",
             "ice core samples are stored at minus 30 degrees", "unrelated note about printers"]
    ids = [kernel.remember("polar", f).id for f in facts]
    kernel.set_policy("polar", {"retriever": "mem0"}, allow_unmounted=True)  # mounted by each test
    return ids


def _mount(kernel, url):
    from halomem.mounts import _mount_sidecar

    kernel.registry.unmount("mem0")
    _mount_sidecar(kernel.registry, url, None)
    assert kernel.registry.has("mem0")


def _search(kernel):
    return kernel.search("polar", "ice core depth", k=3)


def test_healthy_reference_sidecar(kernel, corpus):
    server = SidecarServer()
    server.start_background()
    try:
        _mount(kernel, server.url)
        result = _search(kernel)
        assert result.driver == "mem0" and result.fallback is None
        assert result.hits[0].ref == corpus[0] and {h.ref for h in result.hits} <= set(corpus)
        assert kernel.audit_tail(1)[0].fields["driver"] == "mem0"
        health = json.loads(urllib.request.urlopen(server.url + "/healthz", timeout=2).read())
        assert health["ok"] and health["mode"] == "bm25s" and health["computed"] == 1
    finally:
        server.shutdown()
        server.server_close()


def test_reference_sidecar_coalesces_a_retry_onto_the_inflight_computation():
    server = SidecarServer(delay=0.5)
    server.start_background()
    body = json.dumps({"query": "ice", "candidates": [{"ref": "a", "content": "ice core"},
                                                      {"ref": "b", "content": "printers"}], "budget": 100,
                       "k": 2}).encode()
    answers = []

    def post():
        req = urllib.request.Request(server.url + "/plan", data=body, method="POST",
                                     headers={"content-type": "application/json", "x-halomem-request-id": "same-id"})
        answers.append(json.loads(urllib.request.urlopen(req, timeout=5).read()))

    try:
        threads = [threading.Thread(target=post) for _ in range(2)]
        threads[0].start()
        time.sleep(0.1)
        threads[1].start()
        for t in threads:
            t.join()
        stats = server.coalescer.stats
        assert (stats.requests, stats.computed, stats.coalesced) == (2, 1, 1)
        assert answers[0] == answers[1] == {"refs": [{"ref": "a", "score": 1.0}]}
    finally:
        server.shutdown()
        server.server_close()


def test_timeout_then_success_reuses_request_id_and_is_audited(kernel, corpus):
    with FaultySidecar(["hang", "ok"]) as sidecar:
        _mount(kernel, sidecar.url)
        started = time.monotonic()
        result = _search(kernel)
    assert result.driver == "mem0" and result.fallback is None and result.hits
    assert len(sidecar.request_ids) == 2 and sidecar.request_ids[0] == sidecar.request_ids[1]
    assert 1.4 < time.monotonic() - started < 3.0
    record = kernel.audit_tail(1)[0].fields
    assert record["driver"] == "mem0" and "attempt 1 failed (timed out after 1.5s)" in record["driver_warnings"]


@pytest.mark.parametrize("modes,reason", [
    (["hang"], "timed out"),
    (["500"], "HTTP 500"),
    (["garbage"], "malformed body"),
    (["trickle"], "timed out"),
])
def test_failures_on_both_attempts_fall_back_to_baseline(kernel, corpus, modes, reason):
    with FaultySidecar(modes) as sidecar:
        _mount(kernel, sidecar.url)
        started = time.monotonic()
        result = _search(kernel)
    assert time.monotonic() - started < 4.5  # two attempts of 1.5 s at most, even for a trickling server
    assert result.driver == "baseline" and result.fallback == "mem0->baseline" and result.hits
    fallback, search = kernel.audit_tail(2)
    assert fallback.action == "fallback" and fallback.fields["driver"] == "mem0"
    assert reason in fallback.fields["reason"] and search.outcome == "ok" and search.fields["driver"] == "baseline"
    assert len(set(sidecar.request_ids)) == 1 and len(sidecar.request_ids) == 2


def test_refs_outside_the_sent_set_are_dropped_and_warned(kernel, corpus):
    with FaultySidecar(["stray"]) as sidecar:
        _mount(kernel, sidecar.url)
        result = _search(kernel)
    assert result.driver == "mem0" and "m_not_sent_to_me" not in {h.ref for h in result.hits} and result.hits
    assert "returned 1 ref(s) it was not sent" in kernel.audit_tail(1)[0].fields["driver_warnings"]


def test_server_killed_mid_request(kernel, corpus):
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("sidecar_faults.py")), "hang"],
                            stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        _mount(kernel, url)
        threading.Timer(0.5, proc.kill).start()
        result = _search(kernel)
    finally:
        proc.kill()
        proc.wait()
    assert result.driver == "baseline" and result.fallback == "mem0->baseline"
    assert kernel.audit_tail(2)[0].fields["driver"] == "mem0" and kernel.audit_tail(2)[0].action == "fallback"


def test_candidates_are_capped_and_content_comes_from_them(kernel):
    kernel.ingest_texts("big", [f"ice core fact {i}" for i in range(400)])
    kernel.set_policy("big", {"retriever": "mem0"}, allow_unmounted=True)
    with FaultySidecar(["ok"]) as sidecar:
        _mount(kernel, sidecar.url)
        result = kernel.search("big", "ice core fact", k=5)
    assert result.driver == "mem0" and len(result.hits) == 5
    assert all(h.content.startswith("ice core fact") for h in result.hits)
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace("big")), kernel.embedder)
        assert len(Mem0Driver._candidates(RetrieverQuery("ice core fact", view, 100, 5))) == CANDIDATE_CAP


def test_constructor_refuses_missing_or_bad_url(monkeypatch, kernel):
    monkeypatch.delenv("HALOMEM_SIDECAR_URL", raising=False)
    with pytest.raises(DriverUnavailableError, match="no sidecar URL configured"):
        Mem0Driver()
    with pytest.raises(DriverUnavailableError, match="must be http"):
        Mem0Driver("ftp://x")
    from halomem.mounts import _mount_sidecar

    kernel.registry.unmount("mem0")
    _mount_sidecar(kernel.registry, "not a url", None)  # logged, never fatal
    assert not kernel.registry.has("mem0")


def test_conformance_mem0_against_reference_server(halomem_certify):
    server = SidecarServer()
    server.start_background()
    try:
        report = halomem_certify(Mem0Driver(server.url), Path(sys.modules[Mem0Driver.__module__].__file__))
        assert report.ok, report.to_dict()
    finally:
        server.shutdown()
        server.server_close()


def test_cli_search_through_sidecar_and_degrades_when_stopped(cli, kernel, corpus):
    server = SidecarServer()
    server.start_background()
    env = {"HALOMEM_SIDECAR_URL": server.url}
    try:
        up = json.loads(cli("search", "--ns", "polar", "--json", "ice core depth", env=env).stdout)
        assert up["driver"] == "mem0" and up["hits"][0]["ref"] == corpus[0]
    finally:
        server.shutdown()
        server.server_close()
    down = cli("search", "--ns", "polar", "--json", "ice core depth", env=env)
    data = json.loads(down.stdout)
    assert down.returncode == 0 and data["driver"] == "baseline" and data["fallback"] == "mem0->baseline"
    assert "driver_fallback=mem0->baseline" in down.stderr
