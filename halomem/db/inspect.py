"""What an operator needs to know about an external PostgreSQL halomem runs on (`db status`)."""
from __future__ import annotations

from typing import Any

from .migrations import READER_ROLE, _read_meta


def external_status(kernel: Any) -> dict[str, Any]:
    engine = kernel.engine
    with engine.connect() as conn:
        version = conn.exec_driver_sql("SHOW server_version").scalar()
        role = conn.exec_driver_sql("SELECT rolname, rolsuper, rolcreaterole FROM pg_roles"
                                    " WHERE rolname = current_user").one()
        vector = conn.exec_driver_sql("SELECT extversion FROM pg_extension WHERE extname = 'vector'").scalar()
        reader_exists = bool(conn.exec_driver_sql(f"SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}'").scalar())
        meta = _read_meta(conn)
    reader = "in use" if kernel.reader_engine is not None else ("not usable" if reader_exists else "missing")
    privileges = "superuser" if role.rolsuper else ("CREATEROLE" if role.rolcreaterole else "no superuser, no CREATEROLE")
    advice = {
        "in use": "",
        "missing": f"no SELECT-only reader role ({READER_ROLE}): retriever drivers read through read-only "
                   "transactions of the owner's connection; have a DBA run `halomem db setup-sql`",
        "not usable": f"the reader role {READER_ROLE} exists but halomem cannot log in as it (its password must be "
                      "the one `halomem db setup-sql` derives from the owner's)",
    }[reader]
    url = engine.url.render_as_string(hide_password=True)
    summary = (f"external PostgreSQL {version} at {url} as {role.rolname} ({privileges}); pgvector {vector}; "
               f"schema v{meta.get('schema_version', '?')}, embedder {meta.get('embedder')}/"
               f"{meta.get('embedding_dim')}-d; reader role {READER_ROLE}: {reader}")
    return {"server_version": version, "url": url, "role": role.rolname, "superuser": bool(role.rolsuper),
            "createrole": bool(role.rolcreaterole), "pgvector": vector, "schema_version": meta.get("schema_version"),
            "embedder": meta.get("embedder"), "reader_role": reader, "reader_advice": advice, "summary": summary}
