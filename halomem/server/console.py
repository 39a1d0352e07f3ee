"""/console: the operator console, static files shipped in the package (no CDN).

The page holds no authority of its own: it signs in with an admin token kept in the page's memory
and calls the same /v1 routes as any client, with the token as a bearer header, so every action
passes the one request pipeline (authentication, admission, the one authorization decision, the
audit row). The files are public; a strict Content-Security-Policy lets them run only their own
script and style and talk only to this server.
"""
from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi.responses import Response

CONSOLE_PATH = "/console"
FILES = {"": ("index.html", "text/html; charset=utf-8"), "console.js": ("console.js", "text/javascript; charset=utf-8"),
         "console.css": ("console.css", "text/css; charset=utf-8")}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cache-Control": "no-cache"}


def _read(name: str) -> bytes:
    return resources.files("halomem.server").joinpath("console", name).read_bytes()


def console_routes(app: Any) -> None:
    loaded = {path: (_read(name), media) for path, (name, media) in FILES.items()}

    def serve(path: str) -> Response:
        found = loaded.get(path)
        if found is None:
            return Response(b"not found", status_code=404, media_type="text/plain", headers=HEADERS)
        body, media = found
        return Response(body, media_type=media, headers=HEADERS)

    @app.get(CONSOLE_PATH, include_in_schema=False)
    def console_page() -> Response:
        return serve("")

    @app.get(CONSOLE_PATH + "/{name}", include_in_schema=False)
    def console_file(name: str) -> Response:
        return serve(name)
