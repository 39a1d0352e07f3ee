"""Identity custody: token format and hashing, the principal store, and the one authorization rule,
checked generatively against an independent statement of it."""
from datetime import timedelta

import pytest
from hypothesis import given, settings, strategies as st

from halomem.auth import ADMIN, READ, WRITE, Caller, authorize
from halomem.auth.store import PrincipalStore, parse_duration, parse_scopes
from halomem.auth.tokens import format_token, hash_secret, new_secret, parse_token
from halomem.errors import AuthenticationError, InvalidInputError, NotFoundError, PermissionDeniedError
from halomem.types import Namespace

from tests.conftest import count

segment = st.sampled_from(["acme", "acme-eng", "eng", "en", "sales", "a.b", "x_y"])
namespaces = st.lists(segment, min_size=1, max_size=4).map(lambda s: Namespace("/".join(s)))
scope_sets = st.sets(st.sampled_from([READ, WRITE, ADMIN]), min_size=0, max_size=3).map(frozenset)


def test_token_format_and_secret_hygiene():
    token = format_token("0123456789abcdef", new_secret())
    assert token.startswith("hm_0123456789abcdef_") and len(token) == 3 + 16 + 1 + 43
    parts = parse_token(token)
    assert parts.secret not in repr(parts)
    assert hash_secret(parts.secret) != parts.secret and len(hash_secret(parts.secret)) == 64
    for bad in ("", "hm_", "hm_0123_abc", "Bearer " + token, token + "!", 42, None, "xx_0123456789abcdef_" + "A" * 43):
        with pytest.raises(AuthenticationError) as err:
            parse_token(bad)
        assert parts.secret not in str(err.value)
    assert len({new_secret() for _ in range(100)}) == 100


@settings(max_examples=500, deadline=None)
@given(caller_ns=namespaces, target=namespaces, scopes=scope_sets)
def test_authorize_matches_the_stated_rule(caller_ns, target, scopes):
    caller = Caller(caller_ns, scopes, "p", "n")
    c, t = caller_ns.path, target.path
    is_descendant_or_self = t == c or t.startswith(c + "/")
    rule = {READ: t == c, WRITE: t == c, ADMIN: is_descendant_or_self}
    for right in (READ, WRITE, ADMIN):
        allowed = right in scopes and rule[right]
        if allowed:
            assert authorize(caller, right, target) == target
        else:
            with pytest.raises(PermissionDeniedError):
                authorize(caller, right, target)
    # a look-alike prefix is never inside: acme-eng is not under acme
    assert not (t.startswith(c) and not is_descendant_or_self and ADMIN in scopes
                and authorize_or_none(caller, ADMIN, target))


def authorize_or_none(caller, right, target):  # noqa: ANN001, ANN201
    try:
        return authorize(caller, right, target)
    except PermissionDeniedError:
        return None


def test_scopes_and_durations_are_validated():
    assert parse_scopes("write, READ") == ("read", "write")
    assert parse_duration("30d") == timedelta(days=30) and parse_duration("12h") == timedelta(hours=12)
    for bad in ("", "root", "read,delete"):
        with pytest.raises(InvalidInputError):
            parse_scopes(bad)
    for bad in ("", "0d", "30", "1y", "-5d"):
        with pytest.raises(InvalidInputError):
            parse_duration(bad)


def test_store_lifecycle_and_audit(kernel):
    store = PrincipalStore(kernel.engine)
    issued = store.create(Namespace("acme/eng"), "ci-bot", "read,write", request_id="r1")
    assert store.authenticate(issued.token).namespace == "acme/eng"
    assert issued.token not in repr(issued)
    assert [p.id for p in store.list(Namespace("acme"))] == [issued.principal.id]
    assert store.list(Namespace("acme/eng/infra")) == [] and store.list(Namespace("acme-eng")) == []
    with pytest.raises(NotFoundError):
        store.revoke(issued.principal.id, subtree=Namespace("acme/sales"), request_id="r2")
    store.revoke(issued.principal.id, request_id="r3")
    with pytest.raises(AuthenticationError, match="revoked"):
        store.authenticate(issued.token)
    expired = store.create(Namespace("acme"), "old", "read", expires_in=timedelta(seconds=-1), request_id="r4")
    with pytest.raises(AuthenticationError, match="expired"):
        store.authenticate(expired.token)
    assert count(kernel, "SELECT count(*) FROM audit_log WHERE action = 'token'") == 3
    assert kernel.audit_verify().ok


def test_token_cli(cli):
    made = cli("token", "create", "--ns", "acme/eng", "--name", "ci-bot", "--scope", "read,write", "--expires", "30d")
    assert made.returncode == 0 and made.stdout.startswith("hm_") and "shown once" in made.stderr
    listed = cli("token", "list", "--ns", "acme", "--json")
    [row] = __import__("json").loads(listed.stdout)
    assert set(row) == {"id", "name", "namespace", "scopes", "created_at", "expires_at", "revoked_at", "created_by",
                        "status"}
    from halomem.auth.tokens import parse_token  # the secret is base64url: it may hold "_" itself

    assert row["expires_at"] and parse_token(made.stdout.strip()).secret not in listed.stdout
    assert cli("token", "revoke", row["id"]).returncode == 0
    assert cli("token", "revoke", "ffffffffffffffff").returncode == 4
    bad = cli("token", "create", "--ns", "acme", "--name", "x", "--scope", "root")
    assert bad.returncode == 3 and bad.stderr.count("\n") == 1
    bad = cli("token", "create", "--ns", "acme//x", "--name", "x")
    assert bad.returncode == 3


def test_the_driver_reader_role_cannot_read_principals(kernel):
    """Drivers' reads run as the SELECT-only reader role, which has no grant on the principals table."""
    import sqlalchemy as sa

    if kernel.reader_engine is None:
        pytest.skip("this server does not let halomem create the reader role")
    PrincipalStore(kernel.engine).create(Namespace("acme"), "bot", "read", request_id="r")
    with kernel.reader_engine.connect() as conn, pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
        conn.exec_driver_sql("SELECT secret_hash FROM principals").all()


def test_token_create_without_expires_gets_the_default_and_never_opts_out(kernel, cli):
    """A forgotten credential ends on its own: 90 days unless asked otherwise, `never` said aloud."""
    import json
    from datetime import datetime, timedelta, timezone

    made = json.loads(cli("token", "create", "--ns", "acme/eng", "--name", "default", "--json").stdout)
    expires = datetime.fromisoformat(made["expires_at"])
    assert timedelta(days=89) < expires - datetime.now(timezone.utc) <= timedelta(days=90)
    forever = json.loads(cli("token", "create", "--ns", "acme/eng", "--name", "forever", "--expires", "never",
                             "--json").stdout)
    assert forever["expires_at"] is None
    listed = cli("token", "list", env={"COLUMNS": "200"}).stdout
    assert f"{expires:%Y-%m-%d}" in listed and "never" in listed
