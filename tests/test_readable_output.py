"""Output a person can trust, on the real CLI: tables fit 80 columns without cutting a name (wrapped,
or a column left out and named), `policy report` shows the policy as text and manual `--driver`
searches apart from its arms, and a search in a namespace with no rows of its own says so on stderr,
with whose rows it shows."""
from __future__ import annotations

import json

from tests.conftest import make_token

LONG_NAME = "nightly-ci-pipeline-of-the-platform-reliability-team-with-a-long-name"


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_token_list_fits_80_columns_and_never_cuts_a_name_or_an_id(kernel, cli):
    token = make_token(kernel, "acme/eng/platform/reliability", "read,write,admin")
    made = cli("token", "create", "--ns", "acme/eng", "--name", LONG_NAME, "--scope", "read,write,admin", "--json")
    assert made.returncode == 0, made.stderr
    listed = cli("token", "list", env={"COLUMNS": "80"})
    assert listed.returncode == 0, listed.stderr
    assert max(len(line) for line in _lines(listed.stdout)) <= 80
    assert "…" not in listed.stdout and "..." not in listed.stdout
    ids = [p["id"] for p in json.loads(cli("token", "list", "--json").stdout)]
    assert ids and all(i in listed.stdout for i in ids)  # each id whole, on one line: what revoke takes
    assert LONG_NAME in "".join(line.split("│")[2].strip() for line in _lines(listed.stdout) if line.count("│") > 3)
    assert "not shown to fit 80 columns" in listed.stdout  # the columns left out are named
    wide = cli("token", "list", env={"COLUMNS": "200"})
    assert "not shown" not in wide.stdout and "created" in wide.stdout
    assert token.startswith("hm_")


def test_policy_report_shows_the_policy_as_text_and_manual_runs_apart(kernel, cli):
    kernel.remember("acme/eng", "Deploys go through ArgoCD canaries")
    kernel.set_policy("acme/eng", {"ab_test": {"a": "baseline", "b": "keyword", "pct_b": 50}})
    for i in range(6):
        kernel.search("acme/eng", f"how do deploys work {i}")
    kernel.search("acme/eng", "ArgoCD", driver="graph")
    report = cli("policy", "report", "--ns", "acme/eng", env={"COLUMNS": "80"})
    assert report.returncode == 0, report.stderr
    text = report.stdout
    assert [line for line in _lines(text) if len(line) > 80] == [] and "…" not in text
    assert "policy: A/B" in text or "policy: ab" in text.lower()
    assert "{" not in _lines(text)[0]  # the policy as text, not a Python dict
    arms, _, manual = text.partition("named their driver")
    assert "baseline" in arms or "keyword" in arms
    assert "graph" not in arms and "graph" in manual
    data = json.loads(cli("policy", "report", "--ns", "acme/eng", "--json").stdout)
    assert {a["driver"] for a in data["manual"]} == {"graph"}
    assert "graph" not in {a["driver"] for a in data["arms"]}


def test_a_namespace_without_rows_of_its_own_says_whose_rows_it_shows(kernel, cli):
    kernel.remember("acme", "Priya Raman is the CTO of acme")
    kernel.remember("acme/eng", "Deploys go through ArgoCD canaries")
    typo = cli("search", "--ns", "acme/egn", "who is the CTO")
    assert typo.returncode == 0
    assert "acme/egn holds no memories of its own" in typo.stderr and "from acme" in typo.stderr
    assert "Priya" in typo.stdout
    nothing = cli("search", "--ns", "acme/egn", "ArgoCD canaries")  # acme/eng's row: a sibling, never shown
    assert "nothing it inherits matched" in nothing.stderr and "ArgoCD" not in nothing.stdout
    own = cli("search", "--ns", "acme/eng", "ArgoCD canaries")
    assert own.stderr == "" and "ArgoCD" in own.stdout


def test_a_fitted_table_never_passes_the_width_nor_cuts_a_cell():
    """Generated tables at generated widths: every line fits (once the droppable columns are gone a
    table may need more, never before), nothing is cut with an ellipsis, and every kept cell's
    characters are all there, in order."""
    import io

    from hypothesis import example, given, settings
    from hypothesis import strategies as st
    from rich.console import Console

    from halomem.cli.tables import PADDING, Column, _min_width, fitted

    words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789./", min_size=1, max_size=30)
    cell = st.lists(words, min_size=1, max_size=4).map(" ".join)

    @settings(max_examples=60, deadline=None)
    @example(shape=([("id", False, 0)] * 5 + [("name", False, 0)], [["0", "0", "0", "0", "0 0 0", "0"]]), width=40)
    @example(shape=([("id", True, 0), ("id", False, 0)], [["0 0 " + "0" * 27 + "2", "0"]]), width=40)
    @given(st.integers(2, 7).flatmap(lambda n: st.tuples(
        st.lists(st.tuples(st.sampled_from(["id", "name", "namespace", "state", "created at"]), st.booleans(),
                           st.integers(0, 3)), min_size=n, max_size=n),
        st.lists(st.lists(cell, min_size=n, max_size=n), min_size=1, max_size=5))), st.integers(40, 140))
    def check(shape, width):
        specs, rows = shape
        columns = [Column(f"{h}{i}", whole=w and i == 0, drop=d if i else 0) for i, (h, w, d) in enumerate(specs)]
        table = fitted(columns, rows, width)
        buffer = io.StringIO()
        Console(file=buffer, width=width, color_system=None, soft_wrap=True).print(table)
        lines = buffer.getvalue().splitlines()
        assert not any("…" in line for line in lines)
        shown = {c.header for c in table.columns}
        kept = [i for i, c in enumerate(columns) if c.header in shown]
        needed = sum(_min_width(columns[i], [r[i] for r in rows]) + PADDING for i in kept) + 1
        if needed <= width:  # it could fit: it does
            assert max(len(line) for line in lines) <= width, "\n".join(lines)
        else:  # it could not: every droppable column was dropped first
            assert all(columns[i].drop == 0 for i in kept)
        text = "".join("".join(lines).split())
        for row in rows:  # each shown cell's characters are all there (wrapped, never cut)
            for i in kept:
                assert "".join(row[i].split()) in text or all(ch in text for ch in row[i] if not ch.isspace())

    check()
