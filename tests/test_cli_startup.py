"""Start-up: a CLI call builds and imports only what it runs (docs/bench/cli.md measures the time).

The command table in halomem.cli.main must match the tree it builds, a local search must not
import numpy, the sandbox, other drivers or other commands' modules, and the remote CLI's direct
HTTP transport must answer exactly as the pooled httpx2 client does."""
import re
import subprocess
import sys

import pytest
import typer

from halomem.cli.main import COMMANDS, build_app, command_named
from halomem_client.client import Client, DirectTransport, PooledTransport
from halomem.errors import NotFoundError, ServiceUnreachableError
from tests.conftest import make_token


def _fail_alike(clients, call, error: type, text: str | None = None) -> None:  # noqa: ANN001
    """Every transport raises exactly ``error`` (not a subclass), its message holding ``text``."""
    for client in clients:
        with pytest.raises(error, match=None if text is None else re.escape(text)) as raised:
            call(client)
        assert type(raised.value) is error


def test_the_command_table_is_the_tree():
    full = typer.main.get_command(build_app())
    assert sorted(full.commands) == sorted(COMMANDS)
    for name in COMMANDS:
        alone = typer.main.get_command(build_app(name))
        assert name in alone.commands
        assert set(alone.commands) <= {n for n, (module, _) in COMMANDS.items() if module == COMMANDS[name][0]}


def test_which_part_of_the_tree_an_argument_list_names():
    assert command_named(["search", "--ns", "acme", "q"]) == "search"
    assert command_named(["--json", "policy", "show"]) == "policy"
    assert command_named(["--version"]) == "" and command_named(["--version", "search"]) == "search"
    assert command_named([]) is None and command_named(["-h"]) is None and command_named(["nosuch"]) is None
    assert command_named(["--help", "search"]) is None  # the root's help lists every command


def _imports_after(args: list[str], env: dict[str, str], names: tuple[str, ...]) -> tuple[int, list[str]]:
    code = (f"import sys; sys.argv = ['halomem', *{args!r}];"
            "import halomem.cli.main as m\ntry: m.run()\nexcept SystemExit as e: code = e.code\n"
            f"print(code, [n for n in {names!r} if n in sys.modules], file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    code, loaded = result.stderr.strip().splitlines()[-1].split(" ", 1)
    return int(code), eval(loaded)  # noqa: S307 - our own print of a list of str


def test_a_local_search_imports_only_what_it_runs(kernel, cli_env):
    kernel.remember("acme", "the cafeteria opens at eight")
    unused = ("numpy", "halomem.sandbox.isolated", "halomem.sandbox.cartridge", "halomem.drivers.baseline",
              "halomem.drivers.graph", "halomem.cli.bench_cmds", "halomem.cli.token_cmds", "halomem.server",
              "httpx2", "rich")
    code, loaded = _imports_after(["search", "--ns", "acme", "--json", "cafeteria"], cli_env, unused)
    assert code == 0 and loaded == []


def test_the_remote_cli_does_not_import_the_pooled_client(api_server, kernel, cli_env):
    token = make_token(kernel, "acme", "read")
    env = {**cli_env, "HALOMEM_URL": api_server.url, "HALOMEM_TOKEN": token}
    code, loaded = _imports_after(["search", "--json", "anything"], env, ("httpx2", "httpcore2", "anyio"))
    assert code == 0 and loaded == []


def test_direct_and_pooled_transports_answer_the_same(api_server, kernel, monkeypatch):
    token = make_token(kernel, "acme/eng", "read,write")
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with Client(api_server.url, token) as pooled, Client.for_cli(api_server.url, token) as direct:
        assert isinstance(pooled._http, PooledTransport) and isinstance(direct._http, DirectTransport)
        made = direct.remember("Invoices are paid on the 5th — net 30, ünïcode kept", source="finance")
        assert pooled.history(made.id)[0].content == "Invoices are paid on the 5th — net 30, ünïcode kept"
        a, b = pooled.search("invoices paid"), direct.search("invoices paid")
        assert [(h.id, h.score) for h in a.hits] == [(h.id, h.score) for h in b.hits] and a.hits
        report = direct.ingest_bytes(b'{"content": "one"}\nnot json\n', skip_bad=True)
        assert report.written == 1 and [line for line, _ in report.skipped] == [2]
        # the same error class from the same problem+json
        _fail_alike((pooled, direct), lambda c: c.history("m_nope"), NotFoundError)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    with Client.for_cli(api_server.url, token) as proxied:
        assert isinstance(proxied._http, PooledTransport)  # a proxy is httpx2's job


def test_an_unreachable_server_is_the_same_error_through_both_transports():
    clients = (Client("http://127.0.0.1:9", "hm_x"), Client.for_cli("http://127.0.0.1:9", "hm_x"))
    _fail_alike(clients, lambda c: c.search("x"), ServiceUnreachableError, "127.0.0.1:9")


def test_the_collector_is_off_only_while_the_process_starts(kernel, cli_env):
    """Off while the kernel boots, on again (start-up frozen) once it serves; a command that boots
    nothing (db status) runs with it on."""
    kernel.remember("acme", "the cafeteria opens at eight")
    code = ("import gc, sys, halomem.kernel as K, halomem.db.embedded as E\n"
            "seen = []\n"
            "def spy(name, f):\n"
            "    def g(*a, **k):\n"
            "        seen.append((name, gc.isenabled()))\n"
            "        return f(*a, **k)\n"
            "    return g\n"
            "K.Kernel.boot = classmethod(spy('boot', K.Kernel.boot.__func__))\n"
            "K.Kernel.search = spy('search', K.Kernel.search)\n"
            "E.status = spy('status', E.status)\n"
            "sys.argv = ['halomem', *sys.argv[1:]]\n"
            "import halomem.cli.main as m\n"
            "try: m.run()\nexcept SystemExit: pass\n"
            "print(seen, gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)")
    cases = [(["search", "--ns", "acme", "cafeteria"], [("boot", False), ("search", True)])]
    if "HALOMEM_DATABASE_URL" not in cli_env:  # an external server's status needs a kernel: it boots
        cases.append((["db", "status"], [("status", True)]))
    for args, expected in cases:
        result = subprocess.run([sys.executable, "-c", code, *args], env=cli_env, capture_output=True, text=True,
                                timeout=120)
        seen, enabled, frozen = result.stderr.strip().splitlines()[-1].rsplit(" ", 2)
        assert eval(seen) == expected and enabled == "True" and frozen == "True", result.stderr  # noqa: S307


def test_lazy_drivers_are_built_once_under_concurrent_first_use():
    import threading

    from halomem.drivers import DriverRegistry

    built, discovered = [], []

    class Slow:
        name = "slow"

        def plan(self, q):  # noqa: ANN001, ANN201
            return []

    def factory():  # noqa: ANN202
        built.append(1)
        threading.Event().wait(0.05)
        return Slow()

    registry = DriverRegistry()
    registry.mount_lazy("slow", factory)

    def discover() -> None:
        threading.Event().wait(0.05)
        discovered.append(1)
        registry.mount_lazy("plugin", factory)

    registry.discover_later(discover)
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append((registry.get("slow"), registry.has("plugin"))))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and len(discovered) == 1
    assert len({id(d) for d, _ in seen}) == 1 and all(found for _, found in seen)
    assert registry.names() == ["plugin", "slow"] and registry.built() == [seen[0][0]]


def test_a_server_that_is_not_halomem_is_one_clear_error(tmp_path):
    import http.server
    import threading

    class Html(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = b"<html>a proxy's login page</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        _fail_alike((Client(url, "hm_x"), Client.for_cli(url, "hm_x")), lambda c: c.search("x"),
                    ServiceUnreachableError, "without JSON")
    finally:
        server.shutdown()
