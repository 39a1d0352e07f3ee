"""What a DBA runs once so halomem can live on a managed PostgreSQL under a least-privilege owner
role (`halomem db setup-sql` prints it; tests and `make test-external` run the same statements).

The owner role owns halomem's database and tables but is no superuser and may not create roles;
the DBA creates the ``vector`` extension (managed services reserve that) and the SELECT-only
reader role that serves retriever drivers. Its password is derived from the owner's
(db.credentials), so halomem finds it without another secret; halomem then grants it SELECT on
exactly the tables drivers read, as the tables' owner.
"""
from __future__ import annotations

import re

from .credentials import derive_reader_password
from .migrations import READER_ROLE

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _checked(name: str, what: str) -> str:
    if not _IDENTIFIER.match(name):
        raise ValueError(f"{what} {name!r} must be a lower-case SQL identifier")
    return name


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def cluster_statements(owner: str, database: str, owner_password: str) -> list[str]:
    owner, database = _checked(owner, "owner role"), _checked(database, "database")
    reader_password = derive_reader_password(owner_password)
    return [
        f"CREATE ROLE {owner} LOGIN PASSWORD {_literal(owner_password)} NOSUPERUSER NOCREATEDB NOCREATEROLE",
        f"CREATE DATABASE {database} OWNER {owner}",
        f"CREATE ROLE {READER_ROLE} LOGIN PASSWORD {_literal(reader_password)} NOSUPERUSER NOCREATEDB"
        " NOCREATEROLE NOINHERIT",
        f"GRANT CONNECT ON DATABASE {database} TO {READER_ROLE}",
    ]


def database_statements() -> list[str]:
    return ["CREATE EXTENSION IF NOT EXISTS vector",
            f"GRANT USAGE ON SCHEMA public TO {READER_ROLE}"]


def render(owner: str, database: str, owner_password: str | None) -> str:
    """The whole script for psql, comments saying what each part is for."""
    password = owner_password or "CHANGE-ME"
    lines = ["-- halomem: run once as the DBA (a superuser, or the managed service's admin role), e.g. with psql.",
             "-- The owner role: owns halomem's database and tables, no superuser, no CREATEROLE."]
    statements = cluster_statements(owner, database, password)
    lines += [statements[0] + ";", statements[1] + ";",
              "-- The SELECT-only role that serves retriever drivers; its password is derived from the owner's,",
              "-- so halomem needs no second secret (change the owner's, and run this part again).",
              statements[2] + ";", statements[3] + ";",
              f"\\connect {database}",
              "-- pgvector, which managed services let only the DBA create; and the reader's schema access.",
              *(s + ";" for s in database_statements()),
              f"-- Then: HALOMEM_DATABASE_URL=postgresql://{owner}:<password>@<host>:5432/{database} halomem init"]
    if owner_password is None:
        lines.insert(1, "-- CHANGE-ME: put the owner's password in both places it appears, or set HALOMEM_DATABASE_URL"
                        " and run `halomem db setup-sql` again to have the reader's derived for you.")
    return "\n".join(lines) + "\n"
