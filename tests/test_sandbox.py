"""The driver boundary is a process boundary: hostile cartridges in the sandbox.

Each cartridge below tries one trick a determined author would (runtime attribute games, forging
a scope, the DB-API class, files under the data dir, the environment, sockets, fork/exec,
signalling the kernel, ptrace, raising its limits, huge allocations, endless loops, corrupting
the pipe). A trick that works makes plan() return normally or raise "LEAK: <what it got>"; a
blocked one raises "blocked: <why>". Each must read nothing outside its caller's lineage, write
nothing, and leave searches working (fallback to baseline, audited).
"""
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from halomem.sandbox.cartridge import from_path
from halomem.sandbox.isolated import IsolatedDriver, Limits
from tests.conftest import count

PRELUDE = '''
import os, sys
from halomem.drivers import DriverUnavailableError
from halomem.retrieval import hybrid_rank
from halomem.types import Capabilities

SOCKET_DIR = {socket_dir!r}
HOME = {home!r}
CANARY = {canary!r}

def leak(what):
    raise DriverUnavailableError("LEAK: " + str(what)[:200])

def blocked(exc):
    raise DriverUnavailableError("blocked: " + type(exc).__name__ + ": " + str(exc)[:100])

class Cartridge:
    name = "hostile"

    def capabilities(self):
        return Capabilities()

    def plan(self, q):
{body}
'''

TRICKS = {
    "attribute_chain": '''
        import operator, functools
        names = ["_" + "reader", "_" + "scope", "_" + "rfd"]
        found = [n for n in names if hasattr(q.view, n)]
        slots = getattr(type(q.view), "__slots__", ())
        grab = functools.reduce(getattr, ["__class__", "__init__", "__globals__"], q.view)
        if any(k in grab for k in ("IndexReader", "Scope", "MemoryIndex")):
            leak(sorted(grab)[:5])
        import gc
        kernel_objects = [o for o in gc.get_objects() if type(o).__name__ in ("Engine", "IndexReader", "Kernel",
                                                                              "Connection", "KernelScopedView")]
        if kernel_objects:
            leak(kernel_objects[:3])
        raise DriverUnavailableError("blocked: no kernel objects in this process " + repr(found + list(slots)))
''',
    "forge_scope": '''
        from halomem.types import Namespace
        q.view.namespace = Namespace("acme/sales")  # claim a sibling's namespace
        seen = " ".join(c.content for c in q.view.candidates(500))
        seen += " ".join(h.content for h in q.view.vector_search(q.view.embed([CANARY])[0], 50))
        if CANARY in seen:
            leak(seen)
        return hybrid_rank(q)
''',
    "statistics_side_channel": '''
        # corpus statistics through the proxy: a sibling's words must count for nothing
        stats = q.view.corpus_stats([CANARY, "staging", "deploys"])
        if stats.document_frequency.get(CANARY) or stats.documents != 2:
            leak(stats)
        scored = q.view.lexical_candidates(CANARY + " staging", 50)
        if any(CANARY in c.content for c in scored) or not all(c.score and c.score > 0 for c in scored):
            leak(scored)
        return hybrid_rank(q)
''',
    "dbapi_class": '''
        try:
            import psycopg
            conn = psycopg.connect(f"host={SOCKET_DIR} user=postgres dbname=postgres connect_timeout=3")
            leak(conn.execute("SELECT count(*) FROM memories").fetchone())
        except DriverUnavailableError:
            raise
        except Exception as exc:
            blocked(exc)
''',
    "credentials_file": '''
        for name in ("db-credentials.json", "pgdata/pg_hba.conf", "pgdata/postgresql.conf"):
            try:
                leak(open(os.path.join(HOME, name)).read())
            except DriverUnavailableError:
                raise
            except Exception as exc:
                last = exc
        try:
            leak(os.listdir(HOME))
        except DriverUnavailableError:
            raise
        except Exception as exc:
            blocked(last)
''',
    "parent_environ": '''
        try:
            leak(open(f"/proc/{os.getppid()}/environ", "rb").read())
        except DriverUnavailableError:
            raise
        except Exception as exc:
            pass
        secrets = {k: v for k, v in os.environ.items() if "HALOMEM" in k or "DATABASE" in k or k.startswith("PG")}
        if secrets:
            leak(secrets)
        raise DriverUnavailableError("blocked: environment holds " + ",".join(sorted(os.environ)))
''',
    "sockets": '''
        import socket
        for family, target in ((socket.AF_UNIX, SOCKET_DIR + "/.s.PGSQL.5432"), (socket.AF_INET, ("127.0.0.1", 5432))):
            try:
                s = socket.socket(family, socket.SOCK_STREAM)
                s.settimeout(2)
                s.connect(target)
                leak(f"connected to {target}")
            except DriverUnavailableError:
                raise
            except Exception as exc:
                last = exc
        blocked(last)
''',
    "fork_exec": '''
        import subprocess
        try:
            leak(subprocess.run(["/bin/sh", "-c", "id"], capture_output=True).stdout)
        except DriverUnavailableError:
            raise
        except Exception as exc:
            pass
        try:
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            leak(f"forked {pid}")
        except DriverUnavailableError:
            raise
        except Exception as exc:
            blocked(exc)
''',
    "signal_parent": '''
        import signal
        try:
            os.kill(os.getppid(), signal.SIGKILL)
            leak("signalled the kernel")
        except DriverUnavailableError:
            raise
        except Exception as exc:
            blocked(exc)
''',
    "ptrace_parent": '''
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.ptrace(16, os.getppid(), 0, 0) == 0:  # PTRACE_ATTACH
            leak("attached to the kernel")
        raise DriverUnavailableError("blocked: ptrace errno " + str(ctypes.get_errno()))
''',
    "write_files": '''
        for path in ("/tmp/halomem-sandbox-pwned", os.path.join(HOME, "pwned")):
            try:
                open(path, "w").write("pwned")
                leak(f"wrote {path}")
            except DriverUnavailableError:
                raise
            except Exception as exc:
                last = exc
        blocked(last)
''',
    "raise_limits": '''
        import resource
        try:
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            leak("raised its memory limit")
        except DriverUnavailableError:
            raise
        except Exception as exc:
            blocked(exc)
''',
    "huge_allocation": '''
        hoard = bytearray(8 * 1024 ** 3)
        leak(len(hoard))
''',
    "endless_loop": '''
        while True:
            pass
''',
    "corrupt_the_pipe": '''
        sys.stdout.write("garbage on stdout " * 1000)
        sys.stdout.flush()
        for fd in range(3, 12):
            try:
                os.write(fd, b"\\xff\\xff\\xff\\xffnot a frame")
            except OSError:
                pass
        return hybrid_rank(q)
''',
}


@pytest.fixture()
def world(kernel, settings):
    """acme/eng holds the caller's rows; acme/sales a sibling canary the cartridges hunt for."""
    from halomem.db import embedded

    kernel.remember("acme", "the staging cluster runs in eu-west-1")
    kernel.remember("acme/eng", "deploys go through canaries on staging")
    kernel.remember("acme/sales", "canarysecretword quota numbers for the sales team")
    status = embedded.status(settings.home) if not settings.database_url else None
    return {"socket_dir": (status.socket_dir if status else "/nonexistent") or "/nonexistent",
            "home": str(settings.home), "canary": "canarysecretword"}


def _mount(kernel, tmp_path, name, body, world, deadline_s=3.0, memory=512 << 20):
    path = tmp_path / f"{name}.py"
    path.write_text(PRELUDE.format(body=textwrap.indent(textwrap.dedent(body), "        "), **world))
    driver = IsolatedDriver(from_path(path), Limits(deadline_s=deadline_s, memory_bytes=memory))
    kernel.registry.mount(driver)
    return driver


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_hostile_cartridge_is_contained(kernel, tmp_path, world, trick):
    memories_before = count(kernel, "SELECT count(*) FROM memories")
    driver = _mount(kernel, tmp_path, trick, TRICKS[trick], world)
    started = time.monotonic()
    result = kernel.search("acme/eng", "staging deploys canarysecretword", driver=driver.name)
    elapsed = time.monotonic() - started
    # searches keep working, nothing from a sibling appears
    assert result.hits and all(h.namespace in ("acme", "acme/eng") for h in result.hits)
    assert all(world["canary"] not in h.content for h in result.hits)
    # the audit trail says what happened; no trick leaked anything into it either
    details = " ".join(r.detail for r in kernel.audit_tail(10))
    assert "LEAK" not in details, details
    assert world["canary"] not in details
    if result.fallback:
        assert any(r.action == "fallback" and r.fields["driver"] == driver.name
                   for r in kernel.audit_tail(5))
    # nothing written, nothing created, the kernel alive and fast to answer again
    assert count(kernel, "SELECT count(*) FROM memories") == memories_before
    assert not Path("/tmp/halomem-sandbox-pwned").exists() and not (Path(world["home"]) / "pwned").exists()
    assert elapsed < 30
    again = kernel.search("acme/eng", "staging deploys", driver=driver.name)
    assert again.hits
    print(f"\n{trick}: fallback={result.fallback} "
          f"{next((r.detail for r in kernel.audit_tail(10) if r.action == 'fallback'), 'served by the cartridge')[:160]}")


def test_blocked_tricks_say_why(kernel, tmp_path, world):
    """The tricks that must be refused by the OS report the refusal (not a silent success)."""
    expected = {"dbapi_class": "blocked", "credentials_file": "blocked", "sockets": "blocked",
                "fork_exec": "blocked", "signal_parent": "blocked", "write_files": "blocked",
                "raise_limits": "blocked", "parent_environ": "blocked", "ptrace_parent": "blocked",
                "attribute_chain": "blocked"}
    for trick, word in expected.items():
        driver = _mount(kernel, tmp_path, trick, TRICKS[trick], world)
        result = kernel.search("acme/eng", "staging", driver=driver.name)
        assert result.fallback == f"{driver.name}->baseline"
        reason = kernel.audit_tail(3, "fallback")[-1].fields["reason"]
        assert reason.replace("cartridge raised DriverUnavailableError: ", "").startswith(word), (trick, reason)
        driver.close()


def test_entities_cross_the_pipe_for_the_callers_lineage_only(kernel, tmp_path, world):
    """view.entities through the proxy: the caller's and its ancestors' entities, never a sibling's."""
    kernel.add_entity("acme", "Ops Lead")
    kernel.add_entity("acme/eng", "Dana Eng", aliases=["Dana"])
    kernel.add_entity("acme/sales", "Canarysecretword Rep")
    body = '''
        got = sorted((e.name, e.aliases) for e in q.view.entities())
        if got != [("Dana Eng", ("Dana",)), ("Ops Lead", ())]:
            leak(got)
        return hybrid_rank(q)
'''
    driver = _mount(kernel, tmp_path, "entity_names", body, world)
    result = kernel.search("acme/eng", "staging deploys", driver=driver.name)
    assert result.fallback is None and result.hits  # served by the cartridge: its check held


def test_the_similarity_floor_crosses_the_pipe(kernel, tmp_path, world):
    """view.similarity_floor() through the proxy is the kernel's; an isolated hybrid_rank drops what
    matched nothing as the in-process one does."""
    from halomem.embed.calibrate import noise_floor

    body = f'''
        if abs(q.view.similarity_floor() - {noise_floor(kernel.embedder)!r}) > 1e-9:
            leak(q.view.similarity_floor())
        return hybrid_rank(q)
'''
    driver = _mount(kernel, tmp_path, "floor", body, world)
    result = kernel.search("acme/eng", "canaries", driver=driver.name)
    assert result.fallback is None and [h.content for h in result.hits] == ["deploys go through canaries on staging"]
    assert kernel.search("acme/eng", "zebra", driver=driver.name).hits == []


def test_worker_holds_no_connection_no_credentials_and_is_reused(kernel, tmp_path, world):
    body = '''
        raise DriverUnavailableError("blocked: pid " + str(os.getpid()) + " env " + ",".join(sorted(os.environ)))
    '''
    driver = _mount(kernel, tmp_path, "introspect", body, world)
    kernel.search("acme/eng", "staging", driver=driver.name)
    kernel.search("acme/eng", "staging", driver=driver.name)
    reasons = [r.fields["reason"] for r in kernel.audit_tail(10, "fallback")]
    pids = {d.split(" pid ")[1].split()[0] for d in reasons}
    assert len(pids) == 1, "the worker was not reused"
    assert "HALOMEM" not in reasons[-1] and "DATABASE" not in reasons[-1]


def test_deadline_kills_the_worker_and_the_next_call_gets_a_fresh_one(kernel, tmp_path, world):
    driver = _mount(kernel, tmp_path, "slow", "import time\ntime.sleep(60)", world, deadline_s=1.0)
    started = time.monotonic()
    result = kernel.search("acme/eng", "staging", driver=driver.name)
    assert result.fallback and time.monotonic() - started < 10
    assert "deadline passed" in kernel.audit_tail(3, "fallback")[-1].fields["reason"]


@pytest.mark.skipif(bool(os.environ.get("HALOMEM_DATABASE_URL")), reason="the embedded server's own credentials")
def test_database_refuses_connections_without_credentials(kernel, settings, world):
    import subprocess

    code = ("import psycopg, sys\n"
            "for user in ('postgres', 'halomem_reader'):\n"
            "    try:\n"
            "        psycopg.connect(f'host={sys.argv[1]} user={user} dbname=postgres connect_timeout=3')\n"
            "        print('CONNECTED as', user)\n"
            "    except psycopg.OperationalError as exc:\n"
            "        print('refused', user, str(exc).splitlines()[0][-60:])\n")
    out = subprocess.run([sys.executable, "-c", code, world["socket_dir"]], capture_output=True, text=True,
                         timeout=60).stdout
    assert "CONNECTED" not in out and out.count("refused") == 2, out
    creds = Path(settings.home) / "db-credentials.json"
    assert creds.stat().st_mode & 0o077 == 0
    with kernel.engine.connect() as conn:  # the kernel, holding them, connects
        assert conn.execute(sa.text("SELECT 1")).scalar() == 1


def test_ephemeral_servers_require_passwords_too():
    import psycopg

    from halomem.db.embedded import ephemeral_server

    with ephemeral_server() as url:
        parsed = sa.engine.make_url(url)
        assert parsed.password
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(f"host={parsed.query['host']} user=postgres dbname=postgres connect_timeout=3")
        with psycopg.connect(parsed.set(drivername="postgresql").render_as_string(hide_password=False)) as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1


# --- legitimate cartridges pass 6/6 under exactly the isolation production uses -------------------
def _certify_isolated(kit, cartridge):  # noqa: ANN001, ANN202
    driver = IsolatedDriver(cartridge, Limits(deadline_s=10))
    try:
        driver.capabilities()
        return kit.certify(driver, cartridge.source_path, isolation=f"isolated worker: {driver.confinement}")
    finally:
        driver.close()


@pytest.mark.parametrize("name", ["baseline", "fusion", "graph", "keyword"])
def test_shipped_drivers_pass_six_of_six_isolated(halomem_conformance_kit, name):
    from halomem.sandbox.cartridge import from_module

    report = _certify_isolated(halomem_conformance_kit, from_module(f"halomem.drivers.{name}", name))
    assert report.ok, report.to_dict()
    assert report.isolation.startswith("isolated worker: landlock abi")


def test_mem0_client_isolated_reaches_only_its_declared_sidecar(halomem_conformance_kit):
    from urllib.parse import urlsplit

    from halomem.sandbox.cartridge import from_module
    from halomem.sidecar.server import SidecarServer

    server = SidecarServer()
    server.start_background()
    try:
        port = urlsplit(server.url).port
        cartridge = from_module("halomem.drivers.mem0", "mem0", init_args=(server.url,), net_ports=(port,))
        report = _certify_isolated(halomem_conformance_kit, cartridge)
        assert report.ok, report.to_dict()
        assert f"tcp connect only to [{port}]" in report.isolation
    finally:
        server.shutdown()
        server.server_close()


def test_third_party_entry_point_certified_isolated_by_the_cli(cli_env, tmp_path):
    import json
    import subprocess

    from tests.cartridges import install_third_party

    root = install_third_party(tmp_path)
    env = {**cli_env, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-m", "halomem.cli.main", "conformance", "thirdparty", "--json"],
                          env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] and report["isolation"].startswith("isolated worker: landlock abi")
    assert report["driver"] == "thirdparty"


def test_a_file_that_fails_the_scan_is_never_executed(cli_env, tmp_path):
    import json
    import subprocess

    marker = tmp_path / "executed.txt"
    path = tmp_path / "sneaky.py"
    path.write_text(textwrap.dedent(f'''
        import sqlalchemy  # forbidden: the scan fails
        open({str(marker)!r}, "w").write("module code ran")

        class Sneaky:
            name = "sneaky"
            def plan(self, q):
                return []
    '''))
    proc = subprocess.run([sys.executable, "-m", "halomem.cli.main", "conformance", str(path), "--json"],
                          env=cli_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 10
    report = json.loads(proc.stdout)
    assert report["isolation"] == "not executed" and report["passed"] == 0
    results = {c["id"]: c["result"] for c in report["checks"]}
    assert results.pop("read-only") == "FAIL" and set(results.values()) == {"SKIP"}
    assert not marker.exists()
    summary = proc.stderr.strip().splitlines()[-1]  # the skipped checks are said to be not run, not failed
    assert summary.endswith(f"(failed: read-only; not run: {', '.join(results)})"), summary


def test_a_cartridge_is_versioned_by_what_the_kernel_knows_of_it(tmp_path):
    """The version a search row records comes from the distribution's metadata or the file's bytes,
    read by the kernel: a cartridge cannot claim one, and an edited file is a new version."""
    from importlib.metadata import distributions

    from halomem import __version__
    from halomem.sandbox.cartridge import from_entry_point, from_module, from_path
    from tests.cartridges import install_third_party

    root = install_third_party(tmp_path)
    (ep,) = [ep for dist in distributions(path=[str(root)]) for ep in dist.entry_points]
    assert from_entry_point(ep).version == "1.0"
    assert from_module("halomem.drivers.keyword", "keyword").version == __version__
    path = root / "thirdparty_cartridge.py"
    before = from_path(path).version
    path.write_text(path.read_text() + "\n# edited\n")
    after = from_path(path).version
    assert before.startswith("sha256:") and after.startswith("sha256:") and before != after
