"""Retention: a namespace's ttl policy takes its old memories out of present searches and `recent`
at once (its own and, inherited, its descendants'), `halomem maintain` then closes their validity at
the instant they expired with an audit row, and history and as-of keep them. `never` overrides an
inherited ttl; a malformed one is refused with exit 3."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa


def _age(kernel, memory_id: str, days: float) -> datetime:  # noqa: ANN001
    """Make a memory ``days`` old (the suite cannot wait 90 days)."""
    when = datetime.now(timezone.utc) - timedelta(days=days)
    with kernel.engine.begin() as conn:
        conn.execute(sa.text("UPDATE memories SET t_valid_from = :t WHERE id = :id"), {"t": when, "id": memory_id})
    return when


def test_a_ttl_expires_old_memories_at_once_and_maintain_closes_them(kernel, cli):
    old = kernel.remember("acme/eng", "The VPN gateway is vpn1.acme.example")
    new = kernel.remember("acme/eng", "The VPN client is WireGuard")
    born = _age(kernel, old.id, 100)
    org = kernel.remember("acme", "The VPN policy is owned by IT")
    _age(kernel, org.id, 100)
    assert {h.id for h in kernel.search("acme/eng", "VPN gateway client policy").hits} == {old.id, new.id, org.id}

    made = cli("policy", "set", "--ns", "acme/eng", "--ttl", "90d", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["ttl"] == "90d"
    found = {h.id for h in kernel.search("acme/eng", "VPN gateway client policy").hits}
    assert found == {new.id, org.id}  # acme's memory follows acme's policy: none
    assert old.id not in {m.id for m in kernel.recent("acme/eng", 50).memories}
    then = (born + timedelta(days=5)).isoformat()
    assert old.id in {h.id for h in kernel.search("acme/eng", "VPN gateway", as_of=then).hits}  # the past keeps it

    done = cli("maintain", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"expired": {"acme/eng": 1}}
    [row] = [r for r in kernel.history("acme/eng", old.id)]
    assert row.t_valid_to is not None and abs((row.t_valid_to - born) - timedelta(days=90)) < timedelta(seconds=5)
    retired = kernel.audit_tail(5, "retire")[-1].fields
    assert retired["ids"] == [old.id] and retired["reason"] == "ttl 90d"
    assert json.loads(cli("maintain", "--json").stdout) == {"expired": {}}  # nothing left to close


def test_a_ttl_is_inherited_and_never_overrides_it(kernel, cli):
    org = kernel.remember("acme", "Lunch is served at noon")
    eng = kernel.remember("acme/eng", "Standup is at ten")
    infra = kernel.remember("acme/eng/infra", "The pager rotates on Mondays")
    for memory in (org, eng, infra):
        _age(kernel, memory.id, 40)
    assert cli("policy", "set", "--ns", "acme", "--ttl", "30d").returncode == 0
    assert cli("policy", "set", "--ns", "acme/eng/infra", "--ttl", "never").returncode == 0
    seen = {h.id for h in kernel.search("acme/eng/infra", "lunch standup pager").hits}
    assert seen == {infra.id}  # acme's and acme/eng's have expired (acme's ttl), infra's own never does
    shown = cli("policy", "show", "--ns", "acme/eng").stdout
    assert "ttl: 30d (inherited from acme)" in shown
    assert json.loads(cli("maintain", "--json").stdout)["expired"] == {"acme": 1, "acme/eng": 1}


def test_a_malformed_ttl_is_refused(kernel, cli):
    for bad in ("forever", "-3d", "0d", "99999w", "1.5d"):
        run = cli("policy", "set", "--ns", "acme", "--ttl", bad)
        assert run.returncode == 3 and run.stderr.count("\n") == 1, (bad, run.stderr)
    assert kernel.effective_policy("acme").ttl is None
