// halomem console: every action is a call to the same /v1 API an agent uses, with the admin's token
// as a bearer header (held in this module's memory only: no cookie, no storage). Stored text is put
// into the page with textContent, never as markup. A session ends when it ends: signing out (or in)
// empties every output and field the session filled, and signing out reloads the page, so nothing
// of one admin's session (a minted secret, hits, replays) is left for the next one on this tab.
const $ = (id) => document.getElementById(id);
let token = null;

class Problem extends Error {}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body),
                                credentials: "omit", cache: "no-store" });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Problem(`${data.title || r.status}: ${data.detail || r.statusText}`);
  return data;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    if (c instanceof Node) { const td = el("td"); td.append(c); tr.append(td); } else tr.append(el("td", c, "text"));
  }
  return tr;
}

function fill(tableId, rows) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren(...rows);
}

function button(label, onClick) {
  const b = el("button", label);
  b.type = "button";
  b.addEventListener("click", () => guard(onClick));
  return b;
}

async function guard(work) {
  $("error").textContent = "";
  try { await work(); } catch (e) { $("error").textContent = e instanceof Problem ? e.message : String(e); }
}

const pages = {
  async namespaces() {
    const tree = await api("GET", "/v1/namespaces");
    const depth = tree.root.split("/").length;
    fill("namespaces", tree.namespaces.map((n) => {
      const name = el("span", "\u00a0\u00a0".repeat(n.namespace.split("/").length - depth) + n.namespace);
      const tr = row([name, String(n.memories)]);
      tr.dataset.namespace = n.namespace;
      return tr;
    }));
  },
  async memories() {},
  async audit() {
    $("chain").textContent = "checking…";
    const status = await api("GET", "/v1/audit/status");
    $("chain").textContent = status.verified ? "verifies" : "BROKEN: run halomem audit verify";
    await showAudit();
  },
  async policies() {
    const report = await api("GET", "/v1/policy/report?days=7");
    $("policy").textContent = report.policy_text;
    fill("arms", report.arms.map((a) => row([a.driver, String(a.searches), fmt(a.plan_p50_ms), fmt(a.plan_p95_ms),
      pct(a.fallback_rate), pct(a.empty_rate), String(a.feedback),
      a.helpful_rate === null ? "-" : `${a.helpful_rate.toFixed(2)} [${a.helpful_interval[0].toFixed(2)}, ${a.helpful_interval[1].toFixed(2)}]`])));
    $("verdict").textContent = report.verdict ? `verdict: ${report.verdict.verdict}` : "";
    chart(report.arms.filter((a) => a.feedback > 0));
  },
  async tokens() {
    const { tokens } = await api("GET", "/v1/tokens");
    fill("tokens", tokens.map((t) => row([t.id, t.name, t.namespace, t.scopes.join(","), t.status,
      t.status === "active" ? button(`Revoke ${t.name}`, async () => { await api("DELETE", `/v1/tokens/${encodeURIComponent(t.id)}`); await pages.tokens(); }) : ""])));
  },
};

const fmt = (v) => (v === null || v === undefined ? "-" : v.toFixed(1));
const pct = (v) => (v === null || v === undefined ? "-" : `${(100 * v).toFixed(1)}%`);

function chart(arms) {
  const svg = $("chart");
  const ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  const width = 400 / Math.max(arms.length, 1);
  arms.forEach((a, i) => {
    const h = 130 * a.helpful_rate;
    const bar = document.createElementNS(ns, "rect");
    for (const [k, v] of Object.entries({ x: i * width + 10, y: 140 - h, width: width - 20, height: h, fill: "#4c72b0" })) bar.setAttribute(k, v);
    const whisker = document.createElementNS(ns, "line");
    const x = i * width + width / 2;
    for (const [k, v] of Object.entries({ x1: x, x2: x, y1: 140 - 130 * a.helpful_interval[1], y2: 140 - 130 * a.helpful_interval[0], stroke: "#1b1f24" })) whisker.setAttribute(k, v);
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", x); label.setAttribute("y", 155); label.setAttribute("text-anchor", "middle");
    label.setAttribute("font-size", "11");
    label.textContent = a.driver;
    svg.append(bar, whisker, label);
  });
}

async function showAudit() {
  const action = $("action").value.trim();
  const n = Math.min(Math.max(parseInt($("rows").value, 10) || 50, 1), 1000);
  const q = new URLSearchParams({ n: String(n) });
  if (action) q.set("action", action);
  const { rows } = await api("GET", `/v1/audit?${q}`);
  fill("audit", rows.map((r) => {
    const again = r.action === "search" && r.outcome === "ok" ? button(`Replay ${r.seq}`, () => replay(r.seq)) : "";
    const tr = row([String(r.seq), r.at.slice(0, 19).replace("T", " "), r.actor_ns, r.action, r.detail, again]);
    tr.dataset.seq = String(r.seq);
    return tr;
  }));
}

async function replay(seq) {
  const r = await api("POST", `/v1/audit/replay/${seq}`);
  const lines = [`search ${r.seq} in ${r.namespace} as of ${r.as_of}: ${r.identical ? "identical" : "differs"}`];
  for (const ref of r.missing) lines.push(`  missing   ${ref}`);
  for (const ref of r.added) lines.push(`  added     ${ref}`);
  for (const m of r.reranked) lines.push(`  re-ranked ${m.ref} ${m.was} -> ${m.now}`);
  for (const why of r.reasons) lines.push(`  why: ${why}`);
  $("replay").textContent = lines.join("\n");
}

async function timeline(id) {
  const { chain } = await api("GET", `/v1/memories/${encodeURIComponent(id)}/history`);
  const start = Math.min(...chain.map((m) => Date.parse(m.t_valid_from)));
  const span = Math.max(Date.now() - start, 1);
  $("timeline").replaceChildren(...chain.map((m) => {
    const li = el("li");
    const end = m.t_valid_to ? Date.parse(m.t_valid_to) : Date.now();
    const bar = el("span", "", m.t_valid_to ? "bar closed" : "bar");
    bar.style.marginLeft = `${(100 * (Date.parse(m.t_valid_from) - start)) / span / 2}%`;
    bar.style.width = `${Math.max((100 * (end - Date.parse(m.t_valid_from))) / span / 2, 0.5)}%`;
    const state = m.erased_at ? "erased" : m.t_valid_to ? "superseded" : "current";
    li.append(el("span", `${m.id} ${state} from ${m.t_valid_from.slice(0, 19)} to ${m.t_valid_to ? m.t_valid_to.slice(0, 19) : "now"} `), bar,
              el("div", m.content || "(erased)", "text"));
    return li;
  }));
}

async function search(event) {
  event.preventDefault();
  await guard(async () => {
    const body = { query: $("query").value, k: 20, token_budget: 200000 };  // a person reads it all
    if ($("asof").value.trim()) body.as_of = $("asof").value.trim();
    const found = await api("POST", "/v1/search", body);
    $("search-meta").textContent = `${found.hits.length} hits, driver ${found.driver}` + (found.as_of ? `, as of ${found.as_of} (memories only)` : "");
    $("hits").replaceChildren(...found.hits.map((h) => {
      const li = el("li");
      li.append(button(h.id, () => timeline(h.id)), el("span", ` ${h.score.toFixed(3)} ${h.namespace}`), el("div", h.content, "text"));
      return li;
    }));
  });
}

async function show(page) {
  for (const b of document.querySelectorAll("nav button[data-page]")) {
    if (b.dataset.page === page) b.setAttribute("aria-current", "page"); else b.removeAttribute("aria-current");
  }
  for (const s of document.querySelectorAll("section[id^=page-]")) s.hidden = s.id !== `page-${page}`;
  await guard(() => pages[page]());
}

async function signIn(event) {
  event.preventDefault();
  clearSession();
  token = $("token").value.trim();
  $("token").value = "";
  await guard(async () => {
    let me;
    try { me = await api("GET", "/v1/whoami"); } catch (e) { token = null; throw e; }
    if (!me.scopes.includes("admin")) {
      token = null;
      throw new Problem(`this console needs an admin token (this one has ${me.scopes.join(", ")})`);
    }
    $("who").textContent = `${me.name} — admin of ${me.namespace}`;
    $("signin").hidden = true;
    $("app").hidden = false;
    await show("namespaces");
  });
}

// everything a session fills: tables' rows, lists, outputs and the fields an admin typed into
function clearSession() {
  for (const node of document.querySelectorAll("#app tbody, #app ol, #app pre, #app code, #app svg")) node.replaceChildren();
  for (const id of ["who", "chain", "search-meta", "verdict", "error"]) $(id).textContent = "";
  for (const input of document.querySelectorAll("#app input")) input.value = input.defaultValue;
}

function signOut() {
  token = null;
  clearSession();
  $("app").hidden = true;
  $("signin").hidden = false;
  window.location.replace(window.location.pathname);  // a fresh page: nothing of this session in memory
}

$("signin").addEventListener("submit", signIn);
$("signout").addEventListener("click", signOut);
$("search").addEventListener("submit", search);
$("audit-filter").addEventListener("submit", (e) => { e.preventDefault(); guard(showAudit); });
$("whosaw").addEventListener("submit", (e) => {
  e.preventDefault();
  guard(async () => {
    const found = await api("GET", `/v1/audit/who-saw?memory_id=${encodeURIComponent($("whosaw-id").value.trim())}`);
    fill("sightings", found.sightings.map((s) => row([s.at.slice(0, 19).replace("T", " "), s.namespace, s.principal || "operator", s.transport, s.request_id, String(s.rank), s.memory_id])));
  });
});
$("mint").addEventListener("submit", (e) => {
  e.preventDefault();
  guard(async () => {
    const scopes = $("mint-scopes").value.split(",").map((s) => s.trim()).filter(Boolean);
    const made = await api("POST", `/v1/tokens/${$("mint-ns").value.trim().split("/").map(encodeURIComponent).join("/")}`, { name: $("mint-name").value, scopes });
    $("minted").textContent = made.token;
    await pages.tokens();
  });
});
for (const b of document.querySelectorAll("nav button[data-page]")) b.addEventListener("click", () => show(b.dataset.page));
$("token").focus();
