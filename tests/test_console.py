"""The operator console in a real browser: Playwright driving Debian's headless chromium against a
real `halomem serve`, offline. Every page is opened (by mouse and by keyboard) and photographed at
1280 and 800 px; hostile stored text shows literally and runs nothing; a read token cannot open it;
its numbers are the CLI's."""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.conftest import make_token

CHROMIUM = shutil.which("chromium")
# `make test` (HALOMEM_TEST_PROFILE=ci) needs the browser: .ci/run installs it, so a missing one fails there
pytestmark = pytest.mark.skipif(CHROMIUM is None and os.environ.get("HALOMEM_TEST_PROFILE") != "ci",
                                reason="Debian's chromium (apt) is not installed")
PAGES = ("namespaces", "memories", "audit", "policies", "tokens")
HOSTILE = ["<script>window.pwned = 1</script>Deploy notes", '<img src=x onerror="window.pwned = 2">Deploy image',
           "Deploy \u202egnp.exe invoice", "Deploy " + "x" * 65_000]
SHOTS = Path(os.environ.get("HALOMEM_CONSOLE_SHOTS") or tempfile.mkdtemp(prefix="halomem-console-shots-"))


@pytest.fixture()
def browser_page(api_server):  # noqa: ANN001, ANN201
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        here = urlsplit(api_server.url).netloc
        outside: list[str] = []

        def offline(route) -> None:  # noqa: ANN001 - the network is unplugged but for this server
            if urlsplit(route.request.url).netloc == here:
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        context.route("**/*", offline)
        page = context.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("dialog", lambda d: (problems.append(f"dialog {d.message}"), d.dismiss()))
        page.on("pageerror", lambda e: problems.append(str(e)))
        yield page, problems, outside
        browser.close()


def _sign_in(page, url: str, token: str) -> None:  # noqa: ANN001
    page.goto(url + "/console")
    page.keyboard.type(token)  # the token field has focus: a keyboard user types and presses Enter
    page.keyboard.press("Enter")


ALL_SEARCHES = "[...document.querySelectorAll('#audit tbody tr')].every(tr => tr.children[3].textContent === 'search')"


def _until(page, script: str, seconds: float = 30) -> None:  # noqa: ANN001
    """Poll ``script`` until it is true (wait_for_function would eval a string, which the console's CSP forbids)."""
    import time

    deadline = time.monotonic() + seconds
    while not page.evaluate(script):
        assert time.monotonic() < deadline, f"never true: {script}"
        time.sleep(0.05)


def _shoot(page, name: str) -> None:  # noqa: ANN001
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SHOTS / f"console-{name}-{width}.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= width + 1, (name, width)  # no sideways scroll
    page.set_viewport_size({"width": 1280, "height": 900})


def test_every_page_in_a_real_browser_shows_stored_text_literally(browser_page, api_server, kernel, cli):
    page, problems, outside = browser_page
    # the memory browser reads what the token's own namespace reads (as its agents would): acme's
    ids = [kernel.remember("acme", text, source="runbook").id for text in HOSTILE]
    newer = kernel.supersede("acme", ids[0], "<script>window.pwned = 3</script>Deploy notes, revised").id
    kernel.remember_many("acme/eng", [{"content": "Deploys freeze in December"}, {"content": "On-call rotates"}])
    kernel.set_policy("acme", {"ab_test": {"a": "baseline", "b": "keyword", "pct_b": 50}})
    from halomem.auth.rights import Caller
    from halomem.types import Namespace

    for i in range(6):
        found = kernel.search("acme/eng", f"deploy {i}")
        kernel.feedback(Caller.operator(Namespace("acme/eng")), found.request_id, found.hits[0].id,
                        "helpful" if i % 3 else "not-helpful")
    admin = make_token(kernel, "acme", "read,admin")
    _sign_in(page, api_server.url, admin)
    page.wait_for_selector("#namespaces tbody tr")
    shown = {tr.get_attribute("data-namespace"): tr.query_selector_all("td")[1].inner_text()
             for tr in page.query_selector_all("#namespaces tbody tr")}
    cli_tree = json.loads(cli("namespaces", "--ns", "acme", "--json").stdout)
    assert shown == {n["namespace"]: str(n["memories"]) for n in cli_tree["namespaces"]} and shown == {"acme": "4", "acme/eng": "2"}
    _shoot(page, "namespaces")

    page.click("nav button[data-page=memories]")
    page.fill("#query", "deploy")
    page.press("#query", "Enter")
    page.wait_for_selector("#hits li")
    texts = [t.inner_text() for t in page.query_selector_all("#hits li div.text")]
    assert "<script>window.pwned = 3</script>Deploy notes, revised" in texts
    assert '<img src=x onerror="window.pwned = 2">Deploy image' in texts
    assert page.evaluate("document.querySelectorAll('#hits script, #hits img').length") == 0
    long_text = page.evaluate("[...document.querySelectorAll('#hits li div.text')].map(d => d.textContent.length)")
    assert max(long_text) == len(HOSTILE[3])
    rlo = page.evaluate("[...document.querySelectorAll('#hits li div.text')].map(d => d.textContent)"
                        ".find(t => t.includes('invoice'))")
    assert rlo == HOSTILE[2]  # the override character is kept as data; unicode-bidi: plaintext isolates it
    page.click(f"#hits button:text('{newer}')")
    page.wait_for_selector("#timeline li")
    assert len(page.query_selector_all("#timeline li")) == 2 and "superseded" in page.inner_text("#timeline")
    page.fill("#asof", "1d")
    page.press("#asof", "Enter")
    expect(page.locator("#search-meta")).to_have_text(re.compile(r"^0 hits"))
    _shoot(page, "memories")

    page.focus("nav button[data-page=audit]")  # keyboard navigation reaches every page
    page.keyboard.press("Enter")
    expect(page.locator("#chain")).to_have_text("verifies")
    page.fill("#action", "search")
    page.press("#action", "Enter")
    page.wait_for_selector("#audit tbody tr")
    _until(page, ALL_SEARCHES)  # the filtered page, not the first one the audit page showed
    seq = page.query_selector("#audit tbody tr").get_attribute("data-seq")
    page.click(f"#audit button:text('Replay {seq}')")
    expect(page.locator("#replay")).to_contain_text("identical")
    page.fill("#whosaw-id", ids[0])
    page.press("#whosaw-id", "Enter")
    page.wait_for_selector("#sightings tbody tr")
    _shoot(page, "audit")

    page.click("nav button[data-page=policies]")
    page.wait_for_selector("#arms tbody tr")
    report = json.loads(cli("policy", "report", "--ns", "acme", "--json").stdout)
    arms = {tr.query_selector_all("td")[0].inner_text(): tr.query_selector_all("td")[1].inner_text()
            for tr in page.query_selector_all("#arms tbody tr")}
    assert arms == {a["driver"]: str(a["searches"]) for a in report["arms"]}
    assert page.evaluate("document.querySelectorAll('#chart rect').length") == len([a for a in report["arms"]
                                                                                   if a["feedback"]])
    _shoot(page, "policies")

    page.click("nav button[data-page=tokens]")
    page.wait_for_selector("#tokens tbody tr")
    page.fill("#mint-ns", "acme/eng")
    page.fill("#mint-name", "from-the-console")
    page.press("#mint-name", "Enter")
    expect(page.locator("#minted")).to_have_text(re.compile(r"^hm_"))
    page.click("#tokens button:text('Revoke from-the-console')")
    expect(page.locator("#tokens tbody tr", has_text="from-the-console")).to_contain_text("revoked")
    _shoot(page, "tokens")

    assert page.evaluate("window.pwned") is None and not problems and not outside, (problems, outside)
    with kernel.engine.connect() as conn:  # the console's calls went through the pipeline: audited, by the admin
        rows = conn.exec_driver_sql("SELECT action, fields::text AS detail, principal FROM audit_log WHERE action IN "
                                    "('replay', 'token', 'namespaces')").all()
    by_console = {r.action for r in rows if r.principal}  # the tokens the test made are the operator's
    assert by_console == {"replay", "token", "namespaces"}
    assert not any(admin in r.detail for r in rows)  # never a token in the trail


def test_a_read_or_write_token_cannot_open_the_console(browser_page, api_server, kernel):
    page, problems, _ = browser_page
    for scopes in ("read", "read,write"):
        _sign_in(page, api_server.url, make_token(kernel, "acme/eng", scopes))
        expect(page.locator("#error")).to_contain_text("needs an admin token")
        assert "needs an admin token" in page.inner_text("#error") and page.is_hidden("#app")
    _sign_in(page, api_server.url, "hm_not_a_token")
    expect(page.locator("#error")).to_contain_text("unauthenticated")
    assert page.is_hidden("#app") and page.evaluate("document.cookie") == ""
    # the refused calls are the browser's own "failed to load" lines; nothing else may be logged
    problems[:] = [p for p in problems if "401" not in p and "403" not in p]
    assert not problems, problems


def test_a_session_ends_when_it_ends_and_the_next_admin_finds_nothing_of_it(browser_page, api_server, kernel):
    """Sign in as acme/eng's admin, act on every page, sign out; sign in on the same tab as a
    sibling's admin: no minted secret, hit, replay, sighting or typed value of the first is left."""
    page, problems, _ = browser_page
    secret_fact = kernel.remember("acme/eng", "The eng vault code word is heliotrope").id
    kernel.search("acme/eng", "vault code word")
    eng_admin = make_token(kernel, "acme/eng", "read,write,admin")
    sales_admin = make_token(kernel, "acme/sales", "read,write,admin")
    _sign_in(page, api_server.url, eng_admin)
    expect(page.locator("#who")).to_contain_text("admin of acme/eng")
    page.click("nav button[data-page=memories]")
    page.fill("#query", "vault code word")
    page.press("#query", "Enter")
    expect(page.locator("#hits")).to_contain_text("heliotrope")
    page.click(f"#hits button:text('{secret_fact}')")
    expect(page.locator("#timeline")).to_contain_text("heliotrope")
    page.click("nav button[data-page=audit]")
    page.fill("#whosaw-id", secret_fact)
    page.press("#whosaw-id", "Enter")
    expect(page.locator("#sightings tbody tr")).not_to_have_count(0)
    page.locator("#audit button", has_text="Replay").first.click()
    expect(page.locator("#replay")).to_contain_text("search")
    page.click("nav button[data-page=tokens]")
    page.fill("#mint-ns", "acme/eng")
    page.fill("#mint-name", "minted-by-eng")
    page.press("#mint-name", "Enter")
    expect(page.locator("#minted")).to_have_text(re.compile(r"^hm_"))
    minted = page.inner_text("#minted")
    page.click("#signout")
    expect(page.locator("#signin")).to_be_visible()
    assert page.evaluate("document.body.innerText").count("heliotrope") == 0
    page.wait_for_load_state()
    page.fill("#token", sales_admin)  # the same tab, no navigation of the test's own
    page.press("#token", "Enter")
    expect(page.locator("#who")).to_contain_text("admin of acme/sales")
    for name in PAGES:  # every page, as the new admin sees it before acting
        page.click(f"nav button[data-page={name}]")
        html = page.content()
        for trace in ("heliotrope", minted, secret_fact, "minted-by-eng", eng_admin):
            assert trace not in html, (name, trace)
        assert page.input_value("#query") == "" and page.input_value("#whosaw-id") == ""
    assert page.evaluate("document.cookie") == "" and page.evaluate("window.sessionStorage.length") == 0
    assert not [p for p in problems if "401" not in p and "403" not in p], problems


def test_every_console_answer_carries_its_policy_and_no_redirect_follows_the_host_header(api_server, kernel):
    import httpx2

    admin = make_token(kernel, "acme", "read,admin")
    with httpx2.Client(base_url=api_server.url, follow_redirects=False) as http:
        answers = [http.get("/console"), http.get("/console/"), http.get("/console/nothing.js"),
                   http.get("/console/console.js"), http.post("/console"), http.delete("/console/console.css"),
                   http.get("/console/%00"), http.get("/console/", headers={"Host": "evil.example"}),
                   http.get("/console?x=%ff"), http.request("OPTIONS", "/console")]
        for r in answers:
            assert r.headers.get("content-security-policy", "").startswith("default-src 'none'"), (r.url, r.status_code)
            assert r.headers.get("x-frame-options") == "DENY" and r.headers.get("x-content-type-options") == "nosniff"
            assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
            assert "evil.example" not in r.headers.get("location", "") and r.status_code < 500
            assert not 300 <= r.status_code < 400, (r.url, r.status_code, r.headers.get("location"))
        api = [http.get("/v1/whoami", headers={"Authorization": f"Bearer {admin}"}), http.get("/v1/whoami"),
               http.post("/v1/tokens/acme", headers={"Authorization": f"Bearer {admin}"}, json={"name": "n"}),
               http.get("/v1/nowhere", headers={"Authorization": f"Bearer {admin}"}), http.get("/healthz"),
               http.post("/mcp", json={})]
        for r in api:
            assert r.headers.get("cache-control") == "no-store", (r.url, r.status_code)
        assert api[2].status_code == 201 and api[2].json()["token"].startswith("hm_")


def test_an_operator_can_work_in_it_picker_audit_columns_paging_chart_axes_concepts(browser_page, api_server,
                                                                                     kernel):
    """The effective policy of any namespace of the admin's subtree (a picker), audit rows as columns
    newest first with paging, a chart with axes, and a concept hit shown by its path (no empty id)."""
    page, problems, outside = browser_page
    kernel.remember("acme", "Deploys go through ArgoCD canaries")
    kernel.put_concept("acme", "deploys/pipeline", "Deploys: ArgoCD canaries, then a manual promotion")
    kernel.set_policy("acme", {"retriever": "fusion", "ttl": "90d"})
    kernel.set_policy("acme/eng", {"consolidate": "skip-similar"})
    kernel.remember("acme/eng", "On-call rotates weekly")
    for i in range(5):
        kernel.search("acme", f"deploys {i}")
    _sign_in(page, api_server.url, make_token(kernel, "acme", "read,admin"))
    page.wait_for_selector("#namespaces tbody tr")

    page.click("nav button[data-page=memories]")
    page.fill("#query", "deploys pipeline canaries")
    page.press("#query", "Enter")
    page.wait_for_selector("#hits li")
    assert "concept acme:deploys/pipeline" in page.inner_text("#hits")
    assert page.evaluate("[...document.querySelectorAll('#hits button')].filter(b => !b.textContent.trim() ||"
                         " b.textContent === 'null').length") == 0

    page.click("nav button[data-page=policies]")
    page.wait_for_selector("#policy-ns option", state="attached")
    expect(page.locator("#policy-of")).to_have_text("acme")
    options = page.evaluate("[...document.querySelectorAll('#policy-ns option')].map(o => o.value)")
    assert options == ["acme", "acme/eng"]
    expect(page.locator("#policy-effective")).to_contain_text("retriever fusion (set here)")
    page.select_option("#policy-ns", "acme/eng")
    expect(page.locator("#policy-of")).to_have_text("acme/eng")
    expect(page.locator("#policy-effective")).to_contain_text("retriever fusion (from acme)")
    expect(page.locator("#policy-effective")).to_contain_text("near-copies: skip-similar (set here)")
    expect(page.locator("#policy-effective")).to_contain_text("ttl: 90d (from acme)")
    assert "helpful share" in page.evaluate("[...document.querySelectorAll('#chart text')].map(t => t.textContent)"
                                            ".join(' ')")

    page.click("nav button[data-page=audit]")
    page.fill("#action", "search")
    page.fill("#rows", "2")
    page.press("#rows", "Enter")
    expect(page.locator("#audit tbody tr")).to_have_count(2)
    _until(page, ALL_SEARCHES)
    seqs = [int(tr.get_attribute("data-seq")) for tr in page.query_selector_all("#audit tbody tr")]
    assert len(seqs) == 2 and seqs == sorted(seqs, reverse=True)  # newest first
    cells = [td.inner_text() for td in page.query_selector_all("#audit tbody tr:first-child td")]
    assert cells[3] == "search" and cells[5] == "ok" and cells[6] == "fusion" and cells[7].isdigit()
    page.click("#audit-older")
    expect(page.locator("#audit tbody tr")).to_have_count(4)
    more = [int(tr.get_attribute("data-seq")) for tr in page.query_selector_all("#audit tbody tr")]
    assert more == sorted(more, reverse=True) and more[:2] == seqs
    page.fill("#action", "")
    page.select_option("#audit-ns", "acme/eng")
    page.press("#rows", "Enter")
    _until(page, "[...document.querySelectorAll('#audit tbody tr')].every(tr => tr.children[2].textContent === "
                 "'acme/eng')")
    assert page.query_selector_all("#audit tbody tr")  # acme/eng's rows alone: the policy it set, its memory
    _shoot(page, "audit-columns")
    assert not problems and not outside, (problems, outside)


def test_the_memories_picker_spans_what_the_token_reads_and_never_a_descendant(browser_page, api_server, kernel):
    import httpx2

    page, problems, outside = browser_page
    kernel.remember("acme", "The org handbook lives in the wiki")
    kernel.remember_many("acme/eng", [{"content": f"Eng note {i}"} for i in range(30)])
    kernel.remember("acme/eng/bots", "BOTS-ONLY secret rotation schedule")
    kernel.remember("acme/sales", "SALES-ONLY quota for Q3")
    admin = make_token(kernel, "acme/eng", "read,admin")
    _sign_in(page, api_server.url, admin)
    page.wait_for_selector("#namespaces tbody tr")
    page.click("nav button[data-page=memories]")
    _until(page, "document.querySelectorAll('#recent tbody tr').length === 25")
    assert page.evaluate("[...document.querySelectorAll('#memories-ns option')].map(o => o.value)") == ["acme/eng", "acme"]
    assert set(page.evaluate("[...document.querySelectorAll('#recent tbody tr')].map(tr => tr.children[1].textContent)")) \
        == {"acme/eng"}
    page.click("#recent-older")  # the next page of the same namespace
    _until(page, "document.querySelectorAll('#recent tbody tr').length === 30")
    page.select_option("#memories-ns", "acme")
    _until(page, "document.querySelectorAll('#recent tbody tr').length === 1")
    assert page.inner_text("#recent tbody") .count("The org handbook lives in the wiki") == 1
    page.click("#recent tbody button")  # a memory's timeline, from the browser
    _until(page, "document.querySelectorAll('#timeline li').length === 1")
    _shoot(page, "memories-picker")
    body = page.inner_text("body")
    assert "BOTS-ONLY" not in body and "SALES-ONLY" not in body and problems == [] and outside == []
    for other, status in (("acme/eng/bots", 403), ("acme/sales", 403), ("acme//x", 400)):
        answer = httpx2.get(f"{api_server.url}/v1/memories", params={"within": other},
                            headers={"Authorization": f"Bearer {admin}"})
        assert answer.status_code == status, (other, answer.text)
        assert "BOTS-ONLY" not in answer.text and "SALES-ONLY" not in answer.text
