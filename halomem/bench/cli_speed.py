"""bench cli: wall time of `halomem search` as a fresh process, server running vs not."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import report


def _time(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip())
    return (time.perf_counter() - started) * 1000


def run_cli(repeats: int, out_dir: Path, progress: Callable[[str], None] = lambda m: None) -> dict:
    home = Path(tempfile.mkdtemp(prefix="halomem-bench-cli-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
    env["HALOMEM_HOME"] = str(home)
    hm = [sys.executable, "-m", "halomem.cli.main"]
    _time(hm + ["remember", "--ns", "acme", "the cafeteria opens at eight"], env)
    search = hm + ["search", "--ns", "acme", "--json", "when does the cafeteria open"]
    cold = [_time(search, env) for _ in range(repeats)]  # each process starts and stops the server
    _time(hm + ["db", "start"], env)
    try:
        warm = [_time(search, env) for _ in range(repeats)]
    finally:
        _time(hm + ["db", "stop"], env)
    help_ms = [_time(hm + ["--help"], env) for _ in range(repeats)]
    results = {"repeats": repeats, "server_not_running_ms": statistics.median(cold),
               "server_running_ms": statistics.median(warm), "help_ms": statistics.median(help_ms)}
    progress(f"search: {results['server_not_running_ms']:.0f} ms cold, {results['server_running_ms']:.0f} ms warm")
    md = "# `halomem search` as a fresh process (median wall time)\n\n" + report.markdown_table(
        ["case", "ms"], [["server not running (process starts and stops it)", results["server_not_running_ms"]],
                         ["server already running (db start)", results["server_running_ms"]],
                         ["halomem --help (import floor)", results["help_ms"]]])
    report.write(out_dir, "cli", results, md)
    return {**results, "markdown": md}
