"""The conformance kit certifies every built-in driver 6/6, and each check can fail on its own."""
import json
import subprocess
import sys
import textwrap

import pytest

from halomem.conformance import CHECK_IDS, load_driver
from halomem.conformance.fixture import FIXTURE_SHA256, fixture_path, load_fixture
from halomem.errors import ConfigError, DriverError

BUILTINS = ("baseline", "fusion", "graph", "keyword")


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_drivers_pass_six_of_six(halomem_certify, name):
    loaded = load_driver(name)
    report = halomem_certify(loaded.driver, loaded.source_path)
    assert [c.id for c in report.checks] == list(CHECK_IDS)
    assert report.ok, report.to_dict()
    assert report.checks[0].detail.startswith("10/10 planted refs in top-3")


def test_cli_conformance_json_and_exit_code(cli_env):
    proc = subprocess.run([sys.executable, "-m", "halomem.cli.main", "conformance", "keyword", "--json"],
                          env=cli_env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] and data["passed"] == 6 and [c["result"] for c in data["checks"]] == ["PASS"] * 6
    table = subprocess.run([sys.executable, "-m", "halomem.cli.main", "conformance", "graph"], env=cli_env,
                           capture_output=True, text=True, timeout=180)
    assert "result: PASS (6/6 checks)" in table.stdout and table.returncode == 0


# --- drivers broken on purpose: each must fail exactly the check it targets -----------------------

HONEST = '''
import time
from halomem.retrieval import hybrid_rank
from halomem.types import Capabilities, ScoredRef, fit_budget, estimate_tokens
{header}

class Cartridge:
    name = "{name}"
    calls = 0

    def capabilities(self):
        return Capabilities()

    def plan(self, q):
        self.calls += 1
        refs = hybrid_rank(q, fit={fit})
{body}
        return refs
'''

BEHAVIOURAL = {
    # name: (header, body, fit, target check, detail substring)
    "leaks_canary": ("STALE_REFS = []", "        refs = refs + [ScoredRef(r, 'L2', r, 0.01, 'stale', 1) for r in STALE_REFS"
                     " if q.token_budget > 120]", True, "respects-scoped-view", "returned canary"),
    "returns_superseded": ("STALE_REFS = []", "        refs = [ScoredRef(r, 'L2', r, 1.0, 'old', 1) for r in STALE_REFS"
                           " if q.token_budget > 120][:1] + refs", True, "respects-scoped-view",
                           "returned the superseded draft"),
    "forges_ref": ("", "        refs = refs + ([ScoredRef('m_forged00000000000000', 'L2', 'm_forged00000000000000', 0.01,"
                   " 'x', 1)] if q.token_budget > 120 else [])", True, "respects-scoped-view", "did not admit"),
    "overruns_budget": ("", "", False, "budget-discipline", "responses over budget"),
    "flips_order": ("", "        refs = refs[:3][::-1] + refs[3:] if self.calls % 2 else refs", True,
                    "deterministic-k", "top-3 changed between runs"),
    "sleeps": ("", "        time.sleep(0.16)", True, "latency-envelope", "(bound 150ms)"),
    "lies_about_tokens": ("", "        refs = [ScoredRef(r.ref, r.tier, r.ref, r.score, '', 0) for r in "
                          "hybrid_rank(q, fit=False)]", True, "budget-discipline", "responses over budget"),
}


def _write(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("name", sorted(BEHAVIOURAL))
def test_broken_driver_fails_exactly_its_check(halomem_certify, halomem_conformance_kit, tmp_path, name):
    header, body, fit, target, detail = BEHAVIOURAL[name]
    path = _write(tmp_path, name, HONEST.format(name=name, header=header, body=body, fit=fit))
    loaded = load_driver(str(path))
    if name == "leaks_canary":  # stale state from another tenant, as a persistent engine might hold
        sys.modules[type(loaded.driver).__module__].STALE_REFS[:] = list(halomem_conformance_kit.canaries.values())
    if name == "returns_superseded":  # a cache that never heard of the supersede: yesterday's fact for today
        sys.modules[type(loaded.driver).__module__].STALE_REFS[:] = list(halomem_conformance_kit.superseded.values())
    report = halomem_certify(loaded.driver, loaded.source_path)
    failed = {c.id: c.detail for c in report.checks if not c.passed}
    assert list(failed) == [target], report.to_dict()
    assert detail in failed[target]


def test_latency_override_is_reported(halomem_certify, tmp_path):
    path = _write(tmp_path, "slow", HONEST.format(name="slow", header="", body="        time.sleep(0.16)", fit=True))
    loaded = load_driver(str(path))
    report = halomem_certify(loaded.driver, loaded.source_path, latency_budget_ms=400)
    assert report.ok and "bound 400ms, overridden from 150ms" in report.checks[2].detail


def test_cli_failure_exit_code_names_failed_check(cli_env, tmp_path):
    path = _write(tmp_path, "overrun", HONEST.format(name="overrun", header="", body="", fit=False))
    proc = subprocess.run([sys.executable, "-m", "halomem.cli.main", "conformance", str(path)], env=cli_env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 10 and "result: FAIL (5/6 checks)" in proc.stdout
    assert proc.stderr.strip().endswith("passed 5/6 checks (failed: budget-discipline)")


def test_unloadable_drivers_are_reported_not_crashed_on(tmp_path, cli_env):
    path = _write(tmp_path, "needs_args", '''
        class NeedsArgs:
            name = "needs_args"
            def __init__(self, url):
                self.url = url
            def plan(self, q):
                return []
    ''')
    with pytest.raises(DriverError, match=r"not loadable: NeedsArgs needs constructor arguments \(url\)"):
        load_driver(str(path))
    with pytest.raises(DriverError, match="no driver named"):
        load_driver("does_not_exist")
    broken = _write(tmp_path, "syntax", "def plan(:\n")
    with pytest.raises(DriverError, match="import failed: SyntaxError"):
        load_driver(str(broken))
    proc = subprocess.run([sys.executable, "-m", "halomem.cli.main", "conformance", str(path)], env=cli_env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 6 and proc.stderr.count("\n") == 1 and "needs constructor arguments" in proc.stderr


def test_fixture_is_checksummed(tmp_path):
    fx = load_fixture()
    assert len(fx.planted) == 10 and len(fx.canaries) == 5 and fx.planted_namespace == "conf/a"
    assert fx.canary_namespace == "conf/b"
    tampered = tmp_path / "fixture.json"
    tampered.write_bytes(fixture_path().read_bytes().replace(b"peppercorn", b"pepper"))
    with pytest.raises(ConfigError, match="was modified"):
        load_fixture(tampered)
    assert len(FIXTURE_SHA256) == 64


def test_entry_point_cartridge_is_loadable_and_certified(halomem_certify, tmp_path, monkeypatch):
    from tests.cartridges import install_third_party

    install_third_party(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = load_driver("thirdparty")
    assert loaded.origin == "entry point thirdparty_cartridge:Ranker"
    assert loaded.source_path == tmp_path / "thirdparty_cartridge.py"
    assert halomem_certify(loaded.driver, loaded.source_path).ok
