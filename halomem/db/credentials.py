"""Password authentication for the embedded (and ephemeral) PostgreSQL servers.

initdb leaves a server that trusts every local connection: any process of the machine could
connect as the superuser through the unix socket. On first attach halomem gives the superuser a
random password, keeps it in ``db-credentials.json`` (mode 0600) beside the data, and rewrites
pg_hba.conf so every connection must authenticate with scram-sha-256. A sandboxed cartridge
worker can read neither that file nor the kernel's memory, and cannot open a socket at all.

The reader role's password is derived from the superuser's (HMAC), so whoever holds the admin
URL, and only they, can log the reader in, for any server whose URL carries a password.
"""
from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import ConfigError

CREDENTIALS_FILE = "db-credentials.json"
HBA_MARKER = "# halomem: every connection authenticates with scram-sha-256"
HBA = f"""{HBA_MARKER} (passwords: {CREDENTIALS_FILE} beside the data dir)
local   all             all                                     scram-sha-256
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
"""


def derive_reader_password(admin_password: str) -> str:
    return hmac.new(admin_password.encode("utf-8"), b"halomem_reader", hashlib.sha256).hexdigest()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read database credentials {path}: {exc}") from None
    password = data.get("superuser_password") if isinstance(data, dict) else None
    if not isinstance(password, str) or len(password) < 32:
        raise ConfigError(f"database credentials {path} are malformed")
    return password


def _write(path: Path, password: str) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"superuser_password": password}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _hardened(pgdata: Path) -> bool:
    try:
        return HBA_MARKER in (pgdata / "pg_hba.conf").read_text(encoding="utf-8")
    except OSError:
        return False


def secure(pgdata: Path, keep_in: Path, trust_uri: str) -> str:
    """The server's URL with the superuser's password; on first use, set it and require it."""
    import psycopg
    from sqlalchemy.engine import make_url

    path = keep_in / CREDENTIALS_FILE
    url = make_url(trust_uri)
    with _locked(keep_in / ".credentials.lock"):
        password = _read(path)
        if password is None and _hardened(pgdata):
            raise ConfigError(f"the embedded server requires a password but {path} is missing: restore it from a"
                              " backup (or re-create the data dir)")
        if password is None or not _hardened(pgdata):
            password = password or secrets.token_urlsafe(32)
            _write(path, password)  # kept before it is required, so a crash never locks us out
            dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f"ALTER ROLE {url.username} PASSWORD '{password}'")  # urlsafe: no quote
                (pgdata / "pg_hba.conf").write_text(HBA, encoding="utf-8")
                conn.execute("SELECT pg_reload_conf()")
    return url.set(password=password).render_as_string(hide_password=False)
