"""LangGraph's PostgresStore behind the same kind of server as `halomem serve` (FastAPI on uvicorn, its
own process), for `bench peers --callers`: POST /search {namespace, query, limit} answers the keys
``store.search`` returns. The store embeds with halomem's embedder (the same function halomem uses)
and reads through a connection pool as large as halomem's. A benchmark's peer, never a product route.

    python -m halomem.bench.peer_server --url postgresql://... --port 8123 --embedder onnx:minilm-l6-v2
"""
from __future__ import annotations

import argparse
from typing import Any

POOL = 10  # halomem's engine pool (db.engine.make_engine)


def build_app(url: str, embedder_spec: str) -> Any:
    from fastapi import FastAPI
    from langgraph.store.postgres import PostgresStore

    from ..embed.registry import get_embedder
    from .peers import langgraph_index

    manager = PostgresStore.from_conn_string(url, pool_config={"min_size": 1, "max_size": POOL},
                                             index=langgraph_index(get_embedder(embedder_spec)))
    store = manager.__enter__()
    app = FastAPI()
    app.state.store_manager = manager  # held: collected, it would close the store's pool

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/search")
    def search(body: dict[str, Any]) -> list[str]:
        found = store.search(tuple(str(body["namespace"]).split("/")), query=str(body["query"]),
                             limit=int(body.get("limit", 10)))
        return [item.key for item in found]

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--embedder", required=True)
    args = parser.parse_args()
    uvicorn.run(build_app(args.url, args.embedder), host="127.0.0.1", port=args.port, log_level="warning",
                access_log=False)


if __name__ == "__main__":
    main()
