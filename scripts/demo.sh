#!/usr/bin/env bash
# The main job on the embedded default: seed a small org, then show ACL, supersedence and policy
# routing at work. Uses its own data dir (reset each run) so it is repeatable.
set -euo pipefail
cd "$(dirname "$0")/.."
# the store: $HALOMEM_HOME when set (empty, or an earlier demo's: it is reset), else ./.halomem-demo
export HALOMEM_HOME="${HALOMEM_HOME:-$PWD/.halomem-demo}"
if [ -n "$(ls -A "$HALOMEM_HOME" 2>/dev/null)" ] && [ ! -f "$HALOMEM_HOME/.halomem-demo" ]; then
  echo "demo: HALOMEM_HOME=$HALOMEM_HOME holds a store the demo did not make; it resets its store, so unset" \
       "HALOMEM_HOME or point it at an empty directory" >&2
  exit 3
fi
unset HALOMEM_DATABASE_URL HALOMEM_NS
[ -d "$HALOMEM_HOME" ] && halomem db stop >/dev/null 2>&1 || true
rm -rf "$HALOMEM_HOME"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "start the embedded PostgreSQL + pgvector and keep it up for the demo"
halomem db start
touch "$HALOMEM_HOME/.halomem-demo"  # marks the store as the demo's: the next run may reset it
trap 'halomem db stop >/dev/null' EXIT

say "seed three namespaces from halomem/fixtures/demo (bulk ingest, one transaction each)"
halomem ingest --ns acme halomem/fixtures/demo/acme.jsonl
halomem ingest --ns acme/eng halomem/fixtures/demo/acme-eng.jsonl
halomem ingest --ns acme/sales halomem/fixtures/demo/acme-sales.jsonl
halomem entity add --ns acme "Priya Raman" --alias Priya --alias CTO
halomem entity add --ns acme "Ann Okafor" --alias Ann
halomem entity add --ns acme "Marcus Chen" --alias Marcus

say "keyed ingest: a nightly sync that runs twice changes nothing; an edited key is superseded"
printf '%s\n' '{"key": "runbook/deploys", "content": "Deploys go through ArgoCD canaries, then a full rollout", "source": "runbook"}' \
  '{"key": "runbook/oncall", "content": "The on-call engineer hands over on Mondays at 10:00", "source": "runbook"}' > "$HALOMEM_HOME/sync.jsonl"
halomem ingest --ns acme/eng "$HALOMEM_HOME/sync.jsonl"
halomem ingest --ns acme/eng "$HALOMEM_HOME/sync.jsonl"
sed -i 's/Mondays at 10:00/Tuesdays at 09:00/' "$HALOMEM_HOME/sync.jsonl"
halomem ingest --ns acme/eng "$HALOMEM_HOME/sync.jsonl"

say "ACL: acme/eng sees its own rows and acme's, never acme/sales"
halomem search --ns acme/eng "sales target and discounts" --k 5
halomem search --ns acme/sales "sales target and discounts" --k 5

say "meaning, not just words: the default embedder (all-MiniLM-L6-v2 on ONNX Runtime, installed with halomem) finds a memory that shares no word with the question"
halomem search --ns acme/eng "who is woken up at night when production breaks" --k 1

say "supersedence: the on-call rotation changes; only the new head is searchable"
old=$(halomem search --ns acme/eng "on-call rotation handover" --k 1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["hits"][0]["ref"])')
new=$(halomem supersede --ns acme/eng "$old" "On-call rotation for the platform team is now biweekly, handing over on Tuesdays at 09:00.")
halomem search --ns acme/eng "on-call rotation handover" --k 2
halomem history --ns acme/eng "$new"

say "policy routing: acme/eng ranks with graph (entity fan-out), acme/eng/infra inherits it, acme/sales splits A/B"
halomem policy set --ns acme/eng --retriever graph
halomem search --ns acme/eng "what did Priya decide" --k 3
halomem policy show --ns acme/eng/infra
halomem policy set --ns acme/sales --ab-a baseline --ab-b keyword --pct-b 50
halomem search --ns acme/sales "contract renewal notice" --k 2

say "every search is in the tamper-evident audit trail"
halomem audit tail -n 6
halomem audit verify
