// Run by tests/test_typescript_client.py against a live `halomem serve`: HALOMEM_URL, a read-write
// token of acme/eng (HALOMEM_TOKEN), a read-only one (HALOMEM_READ_TOKEN) and one of the sibling
// acme/sales (HALOMEM_SIBLING_TOKEN).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  AuthenticationError, HalomemClient, HalomemError, NotFoundError, PermissionDeniedError, InvalidInputError,
  ServiceUnreachableError,
} from "../src/index.js";

const url = process.env.HALOMEM_URL!;
const hm = new HalomemClient(url, process.env.HALOMEM_TOKEN!);

test("remember, search, get, recent, supersede, feedback and erase round-trip", async () => {
  const me = await hm.whoami();
  assert.equal(me.namespace, "acme/eng");
  const made = await hm.remember("Deploys go through ArgoCD canaries", { source: "runbook", provenance: { page: 3 } });
  assert.equal(made.status, "created");
  const again = await hm.remember("Deploys go through ArgoCD canaries");
  assert.equal(again.status, "unchanged");
  assert.equal(again.id, made.id);
  const found = await hm.search("how do we deploy", { k: 3 });
  assert.equal(found.hits[0].id, made.id);
  assert.ok(found.hits[0].score > 0 && found.hits[0].score <= 1);
  assert.deepEqual(found.hits[0].provenance, { page: 3 });
  const row = await hm.get(made.id);
  assert.equal(row.content, "Deploys go through ArgoCD canaries");
  assert.equal(row.t_valid_to, null);
  const page = await hm.recent({ limit: 5, sources: ["runbook"] });
  assert.deepEqual(page.memories.map((m) => m.id), [made.id]);
  const newer = await hm.supersede(made.id, "Deploys go through Flux canaries");
  assert.equal(newer.supersedes, made.id);
  assert.notEqual((await hm.get(made.id)).t_valid_to, null);
  const verdict = await hm.feedback(found.request_id, found.hits[0].ref, "helpful", "the runbook answer");
  assert.equal(verdict.verdict, "helpful");
  const erased = await hm.erase(newer.id, "test");
  assert.equal(erased.erased, newer.id);
  const tombstone = await hm.get(newer.id);
  assert.equal(tombstone.content, "");
  assert.notEqual(tombstone.erased_at, null);
});

test("errors are typed classes from problem+json", async () => {
  const missing = await hm.get("m_does_not_exist").catch((e) => e);
  assert.ok(missing instanceof NotFoundError && missing instanceof HalomemError);
  assert.equal(missing.status, 404);
  assert.equal(missing.kind, "not-found");
  const reader = new HalomemClient(url, process.env.HALOMEM_READ_TOKEN!);
  await assert.rejects(reader.remember("a read-only token cannot write"), PermissionDeniedError);
  const bad = new HalomemClient(url, "hm_0123456789abcdef_" + "A".repeat(43));
  const refused = await bad.search("anything").catch((e) => e);
  assert.ok(refused instanceof AuthenticationError);
  assert.ok(!String(refused.message).includes("A".repeat(43)));
  await assert.rejects(hm.search("x", { k: 100000 }), InvalidInputError);
  const away = new HalomemClient("http://127.0.0.1:9", "hm_x", { timeoutMs: 2000 });
  await assert.rejects(away.search("x"), ServiceUnreachableError);
});

test("a sibling namespace's token never sees these memories", async () => {
  await hm.remember("The staging cluster is in eu-west-1");
  const sibling = new HalomemClient(url, process.env.HALOMEM_SIBLING_TOKEN!);
  const seen = await sibling.search("where is the staging cluster", { k: 10 });
  assert.ok(seen.hits.every((h) => h.namespace !== "acme/eng"));
  assert.ok((await sibling.recent({ limit: 100 })).memories.every((m) => m.namespace !== "acme/eng"));
});
