"""The HTTP contract as OpenAPI documents it: the bearer scheme, every route's success shape (the
TypedDicts of halomem.results) and the problem+json errors each route can answer, and /docs served
from a packaged Swagger UI, so it renders with no network."""
from __future__ import annotations

from typing import Any, Optional

from typing_extensions import TypedDict

DOCS_ASSETS = "/docs/assets"


class ProblemJSON(TypedDict, total=False):
    type: str
    title: str
    status: int
    detail: str
    kind: str
    exit_code: int
    request_id: Optional[str]


_WHY = {400: "Invalid input (a bound in README 'Limits', an unknown driver)", 401: "Missing, malformed, unknown, "
        "revoked or expired token", 403: "Outside the token's scopes or namespace", 404: "Not visible to the caller "
        "(or no such route)", 405: "Method not allowed", 409: "Conflict (not the chain's head, already erased, a "
        "racing key)", 413: "Body over the server's --max-body", 422: "A body or parameter that does not fit the "
        "schema", 429: "Over the rate limit (Retry-After says when to retry)", 500: "Internal error (the server log "
        "has the details under the request id)", 502: "A driver failed the request", 503: "Database unavailable"}
ALL_ROUTES = (400, 401, 403, 404, 405, 413, 422, 429, 500, 503)


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries documenting the problem bodies of these statuses (moved to
    application/problem+json by ``problem_media_type``)."""
    return {status: {"description": _WHY[status], "model": ProblemJSON} for status in statuses}


def shape(model: Any, status: int = 200, why: str = "Success") -> dict[int | str, dict[str, Any]]:
    """A success response documented by its result shape (not validated at run time: the result
    types build exactly this shape)."""
    return {status: {"description": why, "model": model}}


def problem_media_type(app: Any) -> None:
    """Every 4xx/5xx body in the document is application/problem+json, as the server sends it."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = build()
            for operations in spec.get("paths", {}).values():
                for operation in operations.values():
                    for status, response in operation.get("responses", {}).items():
                        content = response.get("content", {})
                        if status[:1] in "45" and "application/json" in content:
                            content["application/problem+json"] = content.pop("application/json")
            spec["components"]["schemas"].pop("HTTPValidationError", None)
            spec["components"]["schemas"].pop("ValidationError", None)
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = openapi


def docs_routes(app: Any, openapi_url: str) -> None:
    """/docs from the swagger-ui-bundle-v2 package's files (Swagger UI 5), not a CDN."""
    import swagger_ui_bundle
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount(DOCS_ASSETS, StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> Any:
        return get_swagger_ui_html(openapi_url=openapi_url, title="halomem API",
                                   swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png")
