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
  async memories() {
    const { reads } = await api("GET", "/v1/whoami");
    const pick = $("memories-ns");
    const chosen = pick.value;
    pick.replaceChildren(...reads.slice().reverse().map((n) => { const o = el("option", n); o.value = n; return o; }));
    if (chosen && reads.includes(chosen)) pick.value = chosen;
    await showRecent();
  },
  async audit() {
    await pickNamespaces("audit-ns");
    $("chain").textContent = "checking…";
    const status = await api("GET", "/v1/audit/status");
    $("chain").textContent = status.verified ? "verifies" : "BROKEN: run halomem audit verify";
    await showAudit();
  },
  async policies() {
    await pickNamespaces("policy-ns");
    await showPolicy();
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

// a picker over the admin's subtree (its own namespace and below), keeping the choice it had
async function pickNamespaces(id) {
  const { namespaces } = await api("GET", "/v1/namespaces");
  const pick = $(id);
  const chosen = pick.value;
  pick.replaceChildren(...namespaces.map((n) => { const o = el("option", n.namespace); o.value = n.namespace; return o; }));
  if (chosen && namespaces.some((n) => n.namespace === chosen)) pick.value = chosen;
}

// the newest memories of the namespace chosen (one the token reads), a page at a time
async function showRecent(cursor) {
  const q = new URLSearchParams({ limit: "25", within: $("memories-ns").value });
  if (cursor) q.set("cursor", cursor);
  const page = await api("GET", `/v1/memories?${q}`);
  const shown = page.memories.map((m) => row([button(m.id, () => timeline(m.id)), m.namespace,
                                              m.t_valid_from.slice(0, 19).replace("T", " "), m.source || "", m.content]));
  const body = $("recent").querySelector("tbody");
  if (cursor) body.append(...shown); else body.replaceChildren(...shown);
  $("recent-older").hidden = !page.next_cursor;
  $("recent-older").dataset.cursor = page.next_cursor || "";
}

// the effective policy of the namespace chosen in the picker (an admin's subtree), facet by facet
async function showPolicy() {
  const ns = $("policy-ns").value;
  if (!ns) return;
  const p = await api("GET", `/v1/policies/${ns.split("/").map(encodeURIComponent).join("/")}`);
  const routing = p.ab_test
    ? `A/B ${p.ab_test.shadow ? "shadow" : "split"}: ${p.ab_test.a} / ${p.ab_test.b} at ${p.ab_test.pct_b}%`
    : `retriever ${p.retriever}`;
  const from = (facet) => { const o = p.origins[facet]; return o === "default" ? "default" : o === ns ? "set here" : `from ${o}`; };
  $("policy-of").textContent = ns;
  $("policy-effective").textContent =
    `${routing} (${from("routing")}); near-copies: ${p.consolidate} (${from("consolidate")}); ttl: ${p.ttl} (${from("ttl")})` +
    `; model tokens a day: ${p.llm_tokens_per_day ?? "server default"} (${from("llm_tokens_per_day")})`;
}

const fmt = (v) => (v === null || v === undefined ? "-" : v.toFixed(1));
const pct = (v) => (v === null || v === undefined ? "-" : `${(100 * v).toFixed(1)}%`);

// a bar per arm (helpful share, 0 to 1) with its 95% interval, on a labelled axis
function chart(arms) {
  const svg = $("chart");
  const ns = "http://www.w3.org/2000/svg";
  const left = 50, top = 10, height = 140, right = 410;
  const shape = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const y = (share) => top + height * (1 - share);
  svg.replaceChildren(
    shape("line", { x1: left, x2: left, y1: top, y2: top + height, stroke: "#1b1f24" }),
    shape("line", { x1: left, x2: right, y1: top + height, y2: top + height, stroke: "#1b1f24" }),
    shape("text", { x: 12, y: top + height / 2, "font-size": "11", "text-anchor": "middle",
                    transform: `rotate(-90 12 ${top + height / 2})` }, "helpful share"),
    ...[0, 0.5, 1].flatMap((t) => [
      shape("line", { x1: left - 4, x2: left, y1: y(t), y2: y(t), stroke: "#1b1f24" }),
      shape("text", { x: left - 7, y: y(t) + 4, "font-size": "11", "text-anchor": "end" }, t.toFixed(1))]));
  const width = (right - left) / Math.max(arms.length, 1);
  arms.forEach((a, i) => {
    const x = left + i * width + width / 2;
    svg.append(
      shape("rect", { x: left + i * width + 10, y: y(a.helpful_rate), width: Math.max(width - 20, 2),
                      height: height * a.helpful_rate, fill: "#4c72b0" }),
      shape("line", { x1: x, x2: x, y1: y(a.helpful_interval[1]), y2: y(a.helpful_interval[0]), stroke: "#1b1f24" }),
      shape("text", { x, y: top + height + 16, "font-size": "11", "text-anchor": "middle" }, `${a.driver} (${a.feedback})`));
  });
}

// newest first, a page at a time; `before`: the oldest seq shown, to page back
async function showAudit(before) {
  const action = $("action").value.trim();
  const n = Math.min(Math.max(parseInt($("rows").value, 10) || 50, 1), 1000);
  const q = new URLSearchParams({ n: String(n) });
  if (action) q.set("action", action);
  if (before) q.set("before", String(before));
  if ($("audit-ns").value) q.set("within", $("audit-ns").value);
  const { rows } = await api("GET", `/v1/audit?${q}`);
  const shown = rows.slice().reverse().map((r) => {
    const f = r.fields || {};
    const returned = typeof f.returned === "number" ? String(f.returned) : "";
    const again = r.action === "search" && r.outcome === "ok" ? button(`Replay ${r.seq}`, () => replay(r.seq)) : "";
    const tr = row([String(r.seq), r.at.slice(0, 19).replace("T", " "), r.actor_ns, r.action, r.principal || "operator",
                    r.outcome, typeof f.driver === "string" ? f.driver : "", returned,
                    typeof f.ms === "number" ? f.ms.toFixed(1) : "", r.request_id, again]);
    tr.dataset.seq = String(r.seq);
    return tr;
  });
  const body = $("audit").querySelector("tbody");
  if (before) body.append(...shown); else body.replaceChildren(...shown);
  const oldest = rows.length ? rows[0].seq : null;
  $("audit-older").hidden = rows.length < n || oldest === 1;
  $("audit-older").dataset.before = oldest === null ? "" : String(oldest);
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
    $("search-meta").textContent = `${found.hits.length} hit${found.hits.length === 1 ? "" : "s"}, driver ${found.driver}` + (found.as_of ? `, as of ${found.as_of} (memories only)` : "");
    $("hits").replaceChildren(...found.hits.map((h) => {
      const li = el("li");
      // a concept (L3) hit has no memory id, and no chain: its path is shown instead
      li.append(h.id ? button(h.id, () => timeline(h.id)) : el("span", `concept ${h.ref}`),
                el("span", ` ${h.score.toFixed(3)} ${h.namespace}`), el("div", h.content, "text"));
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
  for (const id of ["who", "chain", "search-meta", "verdict", "error", "policy-of", "policy-effective"]) $(id).textContent = "";
  $("policy-ns").replaceChildren();
  $("audit-ns").replaceChildren();
  $("memories-ns").replaceChildren();
  $("recent-older").hidden = true;
  $("audit-older").hidden = true;
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
$("audit-filter").addEventListener("submit", (e) => { e.preventDefault(); guard(() => showAudit()); });
$("audit-older").addEventListener("click", () => guard(() => showAudit(Number($("audit-older").dataset.before))));
$("policy-ns").addEventListener("change", () => guard(showPolicy));
$("audit-ns").addEventListener("change", () => guard(() => showAudit()));
$("memories-ns").addEventListener("change", () => guard(() => showRecent()));
$("browse").addEventListener("submit", (e) => { e.preventDefault(); guard(() => showRecent()); });
$("recent-older").addEventListener("click", () => guard(() => showRecent($("recent-older").dataset.cursor)));
$("policy-pick").addEventListener("submit", (e) => { e.preventDefault(); guard(showPolicy); });
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
