"""bench cli: wall time of fresh `halomem` processes, against the import floor, in one run.

Medians of several runs, the cases alternating run by run so the machine's drift falls on all of
them alike. The floor is `python -c "import sqlalchemy, psycopg"`, the database stack any local
command needs; the report states the machine's load average during the run. halomem's bytecode is
compiled first, as installing a wheel does (an editable install under PYTHONDONTWRITEBYTECODE=1
would otherwise compile ~70 modules on every call).
"""
from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import report


def wall_ms(cmd: list[str], env: dict[str, str]) -> float:
    """Wall time of one fresh process that must succeed."""
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
    compileall.compile_dir(str(Path(__file__).resolve().parents[1]), quiet=1)
    load_before = os.getloadavg()
    wall_ms(hm + ["remember", "--ns", "acme", "the cafeteria opens at eight"], env)
    search = hm + ["search", "--ns", "acme", "--json", "when does the cafeteria open"]
    cold = [wall_ms(search, env) for _ in range(repeats)]  # each process starts and stops the server
    wall_ms(hm + ["db", "start"], env)
    warm, floor, help_ms, version_ms, remember = [], [], [], [], []
    try:
        for i in range(repeats):
            warm.append(wall_ms(search, env))
            floor.append(wall_ms([sys.executable, "-c", "import sqlalchemy, psycopg"], env))
            remember.append(wall_ms(hm + ["remember", "--ns", "acme/bench", f"the shuttle leaves at {i} past nine"], env))
            help_ms.append(wall_ms(hm + ["--help"], env))
            version_ms.append(wall_ms(hm + ["--version"], env))
    finally:
        wall_ms(hm + ["db", "stop"], env)
    results = {"repeats": repeats, "server_not_running_ms": statistics.median(cold),
               "server_running_ms": statistics.median(warm), "import_floor_ms": statistics.median(floor),
               "help_ms": statistics.median(help_ms), "version_ms": statistics.median(version_ms),
               "remember_ms": statistics.median(remember),
               "load_average_before": load_before, "load_average_after": os.getloadavg()}
    results["search_over_floor"] = results["server_running_ms"] / results["import_floor_ms"]
    results["remember_over_floor"] = results["remember_ms"] / results["import_floor_ms"]
    progress(f"search: {results['server_running_ms']:.0f} ms warm ({results['search_over_floor']:.2f}x the "
             f"import floor of {results['import_floor_ms']:.0f} ms), {results['server_not_running_ms']:.0f} ms cold")
    md = ("# `halomem` as a fresh process (median wall time of "
          f"{repeats} runs; load average {load_before[0]:.2f} before, {results['load_average_after'][0]:.2f} after)\n\n"
          "The embedded server, one memory, the default embedder (`onnx`: a `search` or `remember` embeds its\n"
          "text in a forked child while the process starts, embed/prefetch.py). The warm cases alternate run\n"
          "by run (search, floor, remember of one line, `--help`, `--version`); halomem's bytecode compiled\n"
          "first, as a wheel install has it. Goal: `halomem search` and `halomem remember` with the server\n"
          "running ≤ 1.5x the floor.\n\n"
          + report.markdown_table(["case", "ms"], [
              ["`python -c \"import sqlalchemy, psycopg\"` (the floor)", results["import_floor_ms"]],
              ["`halomem search` (server already running: `db start`)", results["server_running_ms"]],
              ["`halomem search` (server not running: the process starts and stops it)",
               results["server_not_running_ms"]],
              ["`halomem remember` of one line (server running)", results["remember_ms"]],
              ["`halomem --help`", results["help_ms"]], ["`halomem --version`", results["version_ms"]],
              ["search / floor", results["search_over_floor"]], ["remember / floor", results["remember_over_floor"]]]))
    report.write(out_dir, "cli", results, md)
    return {**results, "markdown": md}
