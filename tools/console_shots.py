"""Screenshots of the operator console on a realistic store, for docs/console/: the demo's org
(halomem/fixtures/demo), a superseded runbook fact, searches and feedback, then each page at
1280 px in Debian's headless chromium (Playwright), offline. Run: `python tools/console_shots.py`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "console"


def halomem(env: dict[str, str], *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def main() -> int:
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="halomem-shots-"))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}, "HALOMEM_HOME": str(home)}
    fixtures = ROOT / "halomem" / "fixtures" / "demo"
    for ns, name in (("acme", "acme"), ("acme/eng", "acme-eng"), ("acme/sales", "acme-sales")):
        halomem(env, "ingest", "--ns", ns, str(fixtures / f"{name}.jsonl"))
    first = halomem(env, "remember", "--ns", "acme", "Staging is rebuilt every Sunday night", "--source", "runbook")
    halomem(env, "supersede", "--ns", "acme", first, "Staging is rebuilt every Saturday night")
    halomem(env, "policy", "set", "--ns", "acme", "--ab-a", "baseline", "--ab-b", "fusion", "--pct-b", "50")
    for query in ("how do we deploy", "when is staging rebuilt", "who owns the sales forecast", "on-call handover"):
        halomem(env, "search", "--ns", "acme/eng", query)
    admin = halomem(env, "token", "create", "--ns", "acme", "--name", "console", "--scope", "read,admin")
    port = "8093"
    server = subprocess.Popen([sys.executable, "-m", "halomem.cli.main", "serve", "--port", port], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            if subprocess.run(["curl", "-sf", url + "/healthz"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(url + "/console")
            page.keyboard.type(admin)
            page.keyboard.press("Enter")
            page.wait_for_selector("#namespaces tbody tr")
            page.click("nav button[data-page=memories]")
            page.fill("#query", "when is staging rebuilt")
            page.press("#query", "Enter")
            page.wait_for_selector("#hits li")
            page.click("#hits li button")
            page.wait_for_selector("#timeline li")
            page.screenshot(path=str(OUT / "memories.png"), full_page=True)
            page.click("nav button[data-page=audit]")
            page.wait_for_selector("#audit tbody tr")
            page.screenshot(path=str(OUT / "audit.png"), full_page=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=60)
        halomem(env, "db", "stop", "--force")
        shutil.rmtree(home, ignore_errors=True)
    print(f"wrote {OUT / 'memories.png'} and {OUT / 'audit.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
