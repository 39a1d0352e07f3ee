"""The embedded server: dead-pid pruning, pinning, foreign data dirs."""
import json
import os
import subprocess
import sys

import pytest

from halomem.db import embedded
from halomem.errors import ConfigError

pytestmark = pytest.mark.skipif(bool(os.environ.get("HALOMEM_DATABASE_URL")), reason="embedded server only")


def test_prune_dead_pids(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / embedded.PIDS_FILE).write_text(json.dumps([os.getpid(), dead.pid]))
    assert embedded.prune_dead_pids(tmp_path) == [os.getpid()]
    assert json.loads((tmp_path / embedded.PIDS_FILE).read_text()) == [os.getpid()]


def test_foreign_data_dir_is_refused(tmp_path):
    (tmp_path / "somebody-elses.txt").write_text("not ours")
    with pytest.raises(ConfigError, match="not a halomem home"):
        embedded.prepare_home(tmp_path)
    assert (tmp_path / "somebody-elses.txt").read_text() == "not ours"


def test_db_lifecycle_start_pin_stop(cli_env, tmp_path):
    env = {**cli_env, "HALOMEM_HOME": str(tmp_path / "home")}

    def hm(*args):
        return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env=env, capture_output=True,
                              text=True, timeout=120)

    assert json.loads(hm("db", "status", "--json").stdout)["running"] is False
    assert hm("remember", "--ns", "t", "transient server fact").returncode == 0
    assert json.loads(hm("db", "status", "--json").stdout)["running"] is False  # last one out stopped it
    assert hm("db", "start").returncode == 0
    st = json.loads(hm("db", "status", "--json").stdout)
    assert st["running"] and st["pinned"]
    found = json.loads(hm("search", "--ns", "t", "transient", "--json").stdout)
    assert [h["content"] for h in found["hits"]] == ["transient server fact"]
    assert json.loads(hm("db", "status", "--json").stdout)["running"] is True  # pinned: still up
    assert hm("db", "stop").returncode == 0
    assert json.loads(hm("db", "status", "--json").stdout)["running"] is False


def test_db_stop_refuses_while_another_process_is_attached(cli_env, tmp_path):
    home = tmp_path / "home"
    env = {**cli_env, "HALOMEM_HOME": str(home)}

    def hm(*args):
        return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env=env, capture_output=True,
                              text=True, timeout=120)

    assert hm("db", "start").returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from halomem.config import Settings;"
        "from halomem.kernel import Kernel; k = Kernel.boot(Settings(home=Path(sys.argv[1])));"
        "print('attached', flush=True); time.sleep(120)"), str(home)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "attached"
        refused = hm("db", "stop")
        assert refused.returncode == 5 and f"pid {holder.pid}" in refused.stderr
        assert refused.stderr.count("\n") == 1 and "--force" in refused.stderr
        assert json.loads(hm("db", "status", "--json").stdout)["running"] is True
        assert hm("db", "stop", "--force").returncode == 0
        assert json.loads(hm("db", "status", "--json").stdout)["running"] is False
    finally:
        holder.kill()
        holder.wait()


def test_foreign_home_via_cli(cli_env, tmp_path):
    (tmp_path / "data.bin").write_bytes(b"\x00\x01")
    proc = subprocess.run([sys.executable, "-m", "halomem.cli.main", "search", "--ns", "a", "q"],
                          env={**cli_env, "HALOMEM_HOME": str(tmp_path)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 8 and proc.stderr.count("\n") == 1 and "not a halomem home" in proc.stderr
    assert (tmp_path / "data.bin").read_bytes() == b"\x00\x01"


def test_embedded_server_runs_with_machine_sized_settings(kernel):
    from halomem.db import tuning

    wanted = tuning.settings()
    with kernel.engine.connect() as conn:
        shown = {key: conn.exec_driver_sql(f"SHOW {key}").scalar() for key in wanted}
    assert float(shown["random_page_cost"]) == float(wanted["random_page_cost"])
    for key in ("shared_buffers", "effective_cache_size"):  # PostgreSQL prints 2048MB as 2GB
        assert _megabytes(shown[key]) == _megabytes(wanted[key])


def _megabytes(text):
    number, unit = int(text[:-2]), text[-2:]
    return number * {"MB": 1, "GB": 1024}[unit]


def test_tuning_sizes_to_memory_and_keeps_the_users_config(tmp_path):
    from halomem.db import tuning

    small, big = tuning.settings(2 * 1024**3), tuning.settings(64 * 1024**3)
    assert small["shared_buffers"] == "256MB" and big["shared_buffers"] == "2048MB"  # 1/8 of RAM, capped
    assert tuning.settings(512 * 1024**2)["shared_buffers"] == "128MB"  # never below initdb's default
    conf = tmp_path / "postgresql.conf"
    conf.write_text("max_connections = 55\n")
    tuning.apply(tmp_path)
    tuning.apply(tmp_path)
    text = conf.read_text()
    assert text.startswith("max_connections = 55\n") and text.count("include_if_exists") == 1
    assert "random_page_cost = '1.1'" in (tmp_path / tuning.TUNING_FILE).read_text()
