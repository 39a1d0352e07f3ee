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


def test_foreign_home_via_cli(cli_env, tmp_path):
    (tmp_path / "data.bin").write_bytes(b"\x00\x01")
    proc = subprocess.run([sys.executable, "-m", "halomem.cli.main", "search", "--ns", "a", "q"],
                          env={**cli_env, "HALOMEM_HOME": str(tmp_path)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 8 and proc.stderr.count("\n") == 1 and "not a halomem home" in proc.stderr
    assert (tmp_path / "data.bin").read_bytes() == b"\x00\x01"
