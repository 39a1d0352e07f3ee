"""Storage: the engine, the schema, migrations and the embedded PostgreSQL server."""
