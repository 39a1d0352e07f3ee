"""Bulk ingest: all or nothing, line-numbered errors, and crash safety under SIGKILL."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from halomem.errors import IngestError
from tests.conftest import count


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_and_csv_ingest(kernel, tmp_path):
    j = _jsonl(tmp_path / "a.jsonl", [{"content": f"jsonl fact {i}", "source": "s"} for i in range(50)])
    assert kernel.ingest("acme", j).written == 50
    c = tmp_path / "b.csv"
    c.write_text('content,source,provenance\n"a, quoted fact",csv,"{""row"": 1}"\nplain fact,csv,\n', encoding="utf-8")
    assert kernel.ingest("acme", c).written == 2
    assert count(kernel, "SELECT count(*) FROM memories WHERE namespace='acme'") == 52
    assert [r.action for r in kernel.audit_tail(5)] == ["ingest", "ingest"]


def test_bad_line_refuses_whole_file_with_line_number(kernel, tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"content": "good one"}\n{"content": "good two"}\n{not json}\n{"content": ""}\n', encoding="utf-8")
    with pytest.raises(IngestError, match=r"bad.jsonl:3: not valid JSON"):
        kernel.ingest("acme", p)
    assert count(kernel, "SELECT count(*) FROM memories") == 0
    report = kernel.ingest("acme", p, skip_bad=True)
    assert report.written == 2 and [n for n, _ in report.skipped] == [3, 4]


@pytest.mark.parametrize("payload,match", [
    (b"\xff\xfe\x00binary", "not UTF-8"),
    (b'{"content": "x", "namespace": "acme/sales"}\n', "unknown field"),
    (b'["a list"]\n', "JSON object"),
    (b'{"content": "nul \\u0000 inside"}\n', "NUL"),
])
def test_corrupt_files(kernel, tmp_path, payload, match):
    p = tmp_path / "x.jsonl"
    p.write_bytes(payload)
    with pytest.raises(IngestError, match=match):
        kernel.ingest("acme", p)
    assert count(kernel, "SELECT count(*) FROM memories") == 0


def test_unreadable_or_missing_file(kernel, tmp_path):
    with pytest.raises(IngestError, match="cannot read"):
        kernel.ingest("acme", tmp_path / "missing.jsonl")
    with pytest.raises(IngestError, match="unknown format"):
        kernel.ingest("acme", tmp_path / "notes.txt")


def test_ingest_links_entity_mentions(kernel, tmp_path):
    kernel.add_entity("acme", "Zephyr", ["ZPH"])
    p = _jsonl(tmp_path / "e.jsonl", [{"content": "zephyr launched"}, {"content": "zephyrs are winds"},
                                      {"content": "the ZPH team"}])
    kernel.ingest("acme/eng", p)
    assert count(kernel, "SELECT count(*) FROM mentions") == 2


def _two_valid_heads(kernel) -> int:
    return count(kernel, "SELECT count(*) FROM memories a JOIN memories b ON b.supersedes = a.id "
                         "WHERE a.t_valid_to IS NULL AND b.t_valid_to IS NULL")


def _wait_for_copy(kernel, child, timeout=90.0) -> bool:
    """Poll until the child's COPY is running inside its open transaction."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and child.poll() is None:
        if count(kernel, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY memories%'"
                         " AND state = 'active'"):
            return True
        time.sleep(0.02)
    return False


def test_sigkill_during_bulk_ingest_loses_nothing_reported(kernel, cli_env, tmp_path):
    first = _jsonl(tmp_path / "first.jsonl", [{"content": f"committed fact {i}"} for i in range(500)])
    proc = subprocess.run([sys.executable, "-m", "halomem.cli.main", "ingest", "--ns", "acme", "--json", str(first)],
                          env=cli_env, capture_output=True, text=True, timeout=120)
    reported = json.loads(proc.stdout)["written"]
    head = kernel.remember("acme", "chain head v1").id
    kernel.supersede("acme", head, "chain head v2")
    rows = 40000
    big = _jsonl(tmp_path / "big.jsonl", [{"content": f"bulk fact number {i} " + "filler " * 30}
                                          for i in range(rows)])
    child = subprocess.Popen([sys.executable, "-m", "halomem.cli.main", "ingest", "--ns", "acme", str(big)],
                             env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    in_copy = _wait_for_copy(kernel, child)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert in_copy, "the ingest never reached its COPY"
    # the server notices the dead client and rolls its transaction back
    deadline = time.monotonic() + 30
    while count(kernel, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY memories%'") and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    assert count(kernel, "SELECT count(*) FROM memories WHERE content LIKE 'bulk fact%'") == 0
    assert count(kernel, "SELECT count(*) FROM memories WHERE content LIKE 'committed fact%'") == reported == 500
    assert _two_valid_heads(kernel) == 0
    assert kernel.audit_verify().ok
    # the same file ingests whole afterwards
    kernel.ingest("acme", big)
    assert count(kernel, "SELECT count(*) FROM memories WHERE content LIKE 'bulk fact%'") == rows
    # the killed CLI left its pid in the server's attached-pids file; the next attach prunes it
    st = subprocess.run([sys.executable, "-m", "halomem.cli.main", "db", "status", "--json"], env=cli_env,
                        capture_output=True, text=True, timeout=60)
    if not kernel.settings.database_url:
        assert child.pid not in json.loads(st.stdout)["attached_pids"]


@pytest.mark.parametrize("body,bad_lines", [
    ('content,source\n"unterminated quote,a\nnext row,b\nthird row,c\n', [2]),
    ('content,source\n"stray "quote" inside",a\nfine,b\n', [2]),
    ('content,source\none value only\ntwo,values\nthree,values,too many\n', [2, 4]),
    ('content,source\nnul \x00 inside,a\nfine,b\n', [2]),
])
def test_malformed_csv_is_refused_with_every_bad_line(kernel, tmp_path, body, bad_lines):
    p = tmp_path / "bad.csv"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(IngestError) as refused:
        kernel.ingest("acme", p)
    for n in bad_lines:
        assert f"bad.csv:{n}:" in str(refused.value)
    assert f"{len(bad_lines)} bad line(s)" in str(refused.value)
    assert count(kernel, "SELECT count(*) FROM memories") == 0
    report = kernel.ingest("acme", p, skip_bad=True)
    assert [n for n, _ in report.skipped] == bad_lines and report.written >= 1


def test_quoted_multiline_csv_is_still_fine(kernel, tmp_path):
    p = tmp_path / "ok.csv"
    p.write_text('content,source\n"a fact\\nover two lines, with a comma",a\nplain,b\n'.replace("\\n", "\n"),
                 encoding="utf-8")
    assert kernel.ingest("acme", p).written == 2


def test_skip_bad_with_every_line_bad_fails(kernel, tmp_path, cli):
    p = tmp_path / "allbad.jsonl"
    p.write_text("{no\n{nope\n", encoding="utf-8")
    result = cli("ingest", "--ns", "acme", str(p), "--skip-bad")
    assert result.returncode == 11 and "every line is bad" in result.stderr
    assert count(kernel, "SELECT count(*) FROM memories") == 0


def test_keyed_ingest_is_idempotent_and_supersedes_changed_keys(kernel, tmp_path, cli):
    import json

    nightly = tmp_path / "docs.jsonl"
    lines = [{"key": "deploys", "content": "Deploys go through ArgoCD canaries", "source": "wiki"},
             {"key": "oncall", "content": "On-call hands over on Mondays", "source": "wiki"},
             {"content": "an unkeyed note"}]
    nightly.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    first = json.loads(cli("ingest", "--ns", "acme", str(nightly), "--json").stdout)
    assert first["written"] == 3 and first["unchanged"] == [] and first["superseded"] == []
    again = json.loads(cli("ingest", "--ns", "acme", str(nightly), "--json").stdout)
    assert again["unchanged"] == first["ids"] and again["written"] == 0  # the unkeyed line's text is live too
    assert [i["status"] for i in again["items"]] == ["unchanged"] * 3
    lines[1]["content"] = "On-call hands over on Tuesdays"
    nightly.write_text("\n".join(json.dumps(x) for x in lines[:2]) + "\n", encoding="utf-8")
    changed = json.loads(cli("ingest", "--ns", "acme", str(nightly), "--json").stdout)
    assert changed["unchanged"] == [first["ids"][0]] and len(changed["superseded"]) == 1
    old, new = changed["superseded"][0]["old"], changed["superseded"][0]["new"]
    assert old == first["ids"][1] and [r.id for r in kernel.history("acme", new)] == [old, new]
    assert count(kernel, "SELECT count(*) FROM memories WHERE namespace = 'acme' AND key = 'oncall'"
                         " AND t_valid_to IS NULL") == 1
    kernel.remember("acme/eng", "same key elsewhere is its own memory")
    elsewhere = kernel.ingest("acme/eng", nightly)
    assert elsewhere.written == 2 and elsewhere.unchanged == []  # keys are per namespace


def test_a_key_repeated_in_one_file_is_a_bad_line(kernel, tmp_path):
    p = tmp_path / "dup.csv"
    p.write_text("key,content\nk1,first\nk1,second\n", encoding="utf-8")
    with pytest.raises(IngestError, match=r"dup.csv:3: key 'k1' repeats line 2"):
        kernel.ingest("acme", p)
    assert count(kernel, "SELECT count(*) FROM memories") == 0
