"""Schemathesis checks for the API fuzz (tests/test_api_fuzz.py): loaded with SCHEMATHESIS_HOOKS."""
import schemathesis


@schemathesis.check
def refusals_are_problems_with_request_ids(ctx, response, case):  # noqa: ANN001, ANN201
    """Every 4xx is application/problem+json whose request_id is the X-Request-Id header."""
    if response.status_code < 400:
        return
    content_type = (response.headers.get("content-type") or [""])[0]
    if not content_type.startswith("application/problem+json"):
        raise AssertionError(f"{response.status_code} answered {content_type!r}, not problem+json")
    body = response.json()
    header = (response.headers.get("x-request-id") or [""])[0]
    if not header or body.get("request_id") != header:
        raise AssertionError("the problem's request_id is not the X-Request-Id header")


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):  # noqa: ANN001, ANN201
    """A JSON-lines body (POST /v1/import): a generated string as its bytes, any other value as one
    JSON line; the server must refuse what is not an export without a 5xx."""
    import json

    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else \
        (json.dumps(value) + "\n").encode("utf-8")
    return {"data": data, "headers": {"Content-Type": "application/x-ndjson"}}
