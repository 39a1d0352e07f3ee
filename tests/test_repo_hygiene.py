"""The repository never tracks a database: no data dir, server files or credentials in git."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR_MARKERS = ("PG_VERSION", "postmaster.opts", "pg_hba.conf", "HALOMEM_HOME", "db-credentials.json",
                    ".handle_pids.json")


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="not a git checkout")
def test_no_data_dir_is_tracked():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    offending = [p for p in tracked if Path(p).name in DATA_DIR_MARKERS or "/pgdata/" in f"/{p}"
                 or p.startswith((".halomem-demo/", ".halomem/"))]
    assert offending == [], offending[:10]


def test_demo_data_dir_is_ignored():
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert ".halomem-demo/" in ignored and ".halomem/" in ignored
