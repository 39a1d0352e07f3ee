"""The HTTP contract as documented: a bearer security scheme, a result shape and problem+json errors
for every route (the API fuzz checks the server keeps to them), and /docs that renders with no
network, in headless Chromium from Debian's packages."""
from __future__ import annotations

import shutil
import subprocess
import tempfile

import httpx2
import pytest

CHROMIUM = shutil.which("chromium")


def test_every_route_documents_its_security_shape_and_problems(api_server):
    spec = httpx2.get(api_server.url + "/openapi.json").json()
    assert spec["components"]["securitySchemes"]["token"]["scheme"] == "bearer"
    operations = [(path, method, op) for path, ops in spec["paths"].items() if path.startswith("/v1/")
                  for method, op in ops.items()]
    assert len(operations) >= 20
    for path, method, op in operations:
        assert op["security"] == [{"token": []}], (path, method)
        responses = op["responses"]
        for status in ("400", "401", "403", "413", "422", "429", "500", "503"):
            assert list(responses[status]["content"]) == ["application/problem+json"], (path, method, status)
        success = [s for s in responses if s.startswith("2")]
        assert success and any("schema" in responses[s].get("content", {}).get("application/json", {})
                               for s in success) or (method, path) == ("delete", "/v1/policies/{target}"), (path, method)
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # FastAPI's 422 is not what we send


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is installed by .ci/run")
def test_docs_render_with_the_network_unplugged(api_server, tmp_path):
    page = httpx2.get(api_server.url + "/docs").text
    assert "cdn" not in page.lower() and "/docs/assets/swagger-ui-bundle.js" in page
    profile = tempfile.mkdtemp(prefix="chromium-")
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
             "--virtual-time-budget=15000", "--window-size=1280,1600"]
    dom = subprocess.run([*flags, "--dump-dom", api_server.url + "/docs"], capture_output=True, text=True,
                         timeout=120).stdout
    for path in ("/v1/search", "/v1/memories/{memory_id}/supersede", "/v1/tokens"):
        assert f'data-path="{path}"' in dom, path  # Swagger UI rendered the operations list
    assert "authorize" in dom.lower()  # the bearer scheme's Authorize button
    shot = tmp_path / "docs.png"
    subprocess.run([*flags, f"--screenshot={shot}", api_server.url + "/docs"], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 50_000  # a rendered page, not a blank one
