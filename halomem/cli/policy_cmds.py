"""policy set | show | clear | export | import."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import InvalidInputError
from .common import JsonOption, NsOption, data, emit_json, literal, out, store

app = typer.Typer(no_args_is_help=True, help="Per-namespace policy: retriever routing and near-copies.")


@app.command("set")
def policy_set(ns: Optional[str] = NsOption,
               retriever: Optional[str] = typer.Option(None, help="Route every search to this driver (see `halomem "
                                                       "drivers list`)."),
               ab_a: Optional[str] = typer.Option(None, "--ab-a", help="A/B split: the driver that answers the rest "
                                                  "of the queries (arm a)."),
               ab_b: Optional[str] = typer.Option(None, "--ab-b", help="A/B split: the driver tried on a share of "
                                                  "the queries (arm b)."),
               pct_b: Optional[int] = typer.Option(None, "--pct-b", min=0, max=100, help="A/B split: the percentage "
                                                   "of queries (by a hash of the query) that go to --ab-b."),
               shadow: bool = typer.Option(False, "--shadow", help="With --ab-*: a answers every query; b runs "
                                           "beside it on its share and only its refs are recorded."),
               consolidate: Optional[str] = typer.Option(None, help="What a write does about a near-copy of a live "
                                                         "memory: report (name it beside the new id; the default),"
                                                         " skip-similar (write nothing, name the copy) or off."),
               ttl: Optional[str] = typer.Option(None, "--ttl", help="How long a memory stays current: 90d, 12h, "
                                                 "2w (older ones leave present searches; `halomem maintain` closes "
                                                 "them, history kept), or never."),
               llm_tokens_per_day: Optional[int] = typer.Option(None, "--llm-tokens-per-day", min=0, help=(
                   "The chat model tokens extraction may spend for the namespace in a UTC day (0: none).")),
               allow_unmounted: bool = typer.Option(False, "--allow-unmounted", help="Name a driver that is not "
                                                    "installed yet (searches serve baseline until it is)."),
               as_json: bool = JsonOption) -> None:
    """Set facets of a namespace's policy: its routing (--retriever NAME, or --ab-a A --ab-b B --pct-b 25)
    what writes do about near-copies (--consolidate) and how long memories stay current (--ttl). Facets
    not named keep their value."""
    wanted: dict = {}
    if retriever and not any((ab_a, ab_b, pct_b is not None, shadow)):
        wanted["retriever"] = retriever
    elif not retriever and ab_a and ab_b and pct_b is not None:
        wanted["ab_test"] = {"a": ab_a, "b": ab_b, "pct_b": pct_b, **({"shadow": True} if shadow else {})}
    elif retriever or ab_a or ab_b or pct_b is not None or shadow:
        raise InvalidInputError("give either --retriever NAME or all of --ab-a, --ab-b and --pct-b")
    if consolidate is not None:
        wanted["consolidate"] = consolidate
    if ttl is not None:
        wanted["ttl"] = ttl
    if llm_tokens_per_day is not None:
        wanted["llm_tokens_per_day"] = llm_tokens_per_day
    if not wanted:
        raise InvalidInputError("name a facet to set: --retriever, --ab-a/--ab-b/--pct-b, --consolidate, --ttl or "
                                "--llm-tokens-per-day")
    ops = data(ns)
    ops.set_policy(None, wanted, allow_unmounted=allow_unmounted)
    where = str(ops.namespace)
    policy = ops.effective_policy()
    if as_json:
        emit_json(policy.effective_json(where))
    else:
        out.print(f"{where}: {policy.describe()} (set here; its descendants without a policy of their own inherit "
                  "it)", markup=False)


@app.command("show")
def policy_show(ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
    """The effective policy of a namespace and where each facet comes from."""
    ops = data(ns)
    policy = ops.effective_policy()
    where = str(ops.namespace)
    if as_json:
        emit_json(policy.effective_json(where))
        return
    for facet, shown in (("routing", policy.describe_routing()),
                         ("consolidate", f"near-copies: {policy.consolidation}"),
                         ("ttl", f"ttl: {policy.ttl or 'never'}"),
                         ("llm_tokens_per_day", "model tokens a day: " + (
                             "the server's default" if policy.llm_tokens_per_day is None
                             else str(policy.llm_tokens_per_day)))):
        origin = policy.origin(facet)
        came = ("set here" if origin == where else "halomem's default" if origin == "default"
                else f"inherited from {origin}")
        out.print(f"{where}: {shown} ({came})", markup=False)


@app.command("clear")
def policy_clear(ns: Optional[str] = NsOption, as_json: bool = JsonOption) -> None:
    """Remove a namespace's own policy, every facet (it inherits again)."""
    ops = data(ns)
    cleared = ops.clear_policy(None)
    if as_json:
        emit_json({"namespace": str(ops.namespace), "cleared": cleared})
    else:
        out.print(f"{ops.namespace}: " + ("policy cleared; it inherits again" if cleared else "had no policy of its own"),
                  markup=False)


@app.command("export")
def policy_export(as_json: bool = JsonOption) -> None:
    """Every namespace's own policy, as YAML (or JSON)."""
    exported = {p.namespace: p.to_dict() for p in store("policy export").policies()}
    if as_json:
        emit_json(exported)
    else:
        import yaml

        typer.echo(yaml.safe_dump(exported, sort_keys=True), nl=False)


@app.command("import")
def policy_import(path: Path = typer.Argument(..., help="A YAML file mapping namespace -> policy (as `policy export`"
                                              " writes)."), allow_unmounted: bool = typer.Option(False, "--allow-unmounted", help="Accept drivers"
                                                                  " not installed yet."),
                  as_json: bool = JsonOption) -> None:
    """Apply a YAML file mapping namespace -> policy: all validated, then all written in one
    transaction, or none."""
    try:
        import yaml

        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path}: expected a mapping of namespace -> policy")
    parsed = store("policy import").import_policies({str(ns): p for ns, p in data.items()},
                                                 allow_unmounted=allow_unmounted)
    emit_json({"imported": len(parsed)}) if as_json else out.print(f"imported {len(parsed)} policies")




@app.command("report")
def policy_report(ns: Optional[str] = NsOption,
                  days: float = typer.Option(7.0, "--days", help="The window: searches of the last DAYS."),
                  plot: Optional[Path] = typer.Option(None, "--out", help="Also write a PNG: each arm's helpful "
                                                      "share with its 95% interval (needs matplotlib)."),
                  as_json: bool = JsonOption) -> None:
    """Per arm over the window, from the audit rows and feedback: searches, plan p50/p95, fallback and
    empty-answer rates, helpful share with its interval, and (for an A/B split) a verdict."""
    report = data(ns).policy_report(days)
    if plot is not None:
        _plot(report, plot)
    if as_json:
        emit_json(report)
        return
    out.print(f"{report['namespace']}, last {report['days']:g} days; policy: {report['policy_text']}", soft_wrap=False)
    if report["arms"]:
        out.print(_arms_table(report["arms"]))
    else:
        out.print("no search chose its driver by this policy in the window", soft_wrap=False)
    if report["manual"]:
        out.print("searches that named their driver (--driver), apart from the policy's arms:", soft_wrap=False)
        out.print(_arms_table(report["manual"]))
    for s in report["shadows"]:
        out.print(f"shadow {s['driver']}: {s['runs']} runs, {s['failures']} failed, overlap@k with the answer "
                  f"{s['overlap_at_k']}, plan p50 {s['plan_p50_ms']} ms", soft_wrap=False)
    if "verdict" in report:
        v = report["verdict"]
        more = f" (about {v['more_searches']} more searches per arm)" if v.get("more_searches") else ""
        out.print(f"verdict: {v['verdict']}{more}", soft_wrap=False)


def _arms_table(arms: list[dict]):  # noqa: ANN202 - a rich Table
    from .tables import Column, fitted

    fmt = (lambda v, spec: "-" if v is None else format(v, spec))
    rows = []
    for arm in arms:
        low, high = arm["helpful_interval"]
        helpful = "-" if arm["helpful_rate"] is None else f"{arm['helpful_rate']:.2f} [{low:.2f}, {high:.2f}]"
        rows.append([literal(arm["driver"]), str(arm["searches"]), fmt(arm["plan_p50_ms"], ".1f"),
                     fmt(arm["plan_p95_ms"], ".1f"), fmt(arm["fallback_rate"], ".1%"), fmt(arm["empty_rate"], ".1%"),
                     str(arm["feedback"]), helpful])
    columns = [Column("arm"), Column("searches", whole=True), Column("p50 ms", drop=2), Column("p95 ms", drop=1),
               Column("fallback", drop=3), Column("empty"), Column("feedback", whole=True), Column("helpful [95%]")]
    return fitted(columns, rows)


def _plot(report: dict, path: Path) -> None:
    from ..bench.report import _pyplot
    from ..errors import ConfigError

    plt = _pyplot()
    if plt is None:
        raise ConfigError("--out needs matplotlib (pip install matplotlib)")
    arms = [a for a in report["arms"] if a["feedback"]]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    rates = [a["helpful_rate"] for a in arms]
    errors = [[r - a["helpful_interval"][0] for r, a in zip(rates, arms)],
              [a["helpful_interval"][1] - r for r, a in zip(rates, arms)]]
    ax.bar([a["driver"] for a in arms], rates, yerr=errors, capsize=6, color="#4c72b0")
    ax.set_ylim(0, 1)
    ax.set_ylabel("helpful share of feedback")
    ax.set_title(f"{report['namespace']}: arms over {report['days']:g} days")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
