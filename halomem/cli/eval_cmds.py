"""eval: candidate drivers side by side on the organisation's own judgements."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .common import JsonOption, NsOption, data, emit_json, out, remote


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_(ns: Optional[str] = NsOption,
              judgements: Optional[Path] = typer.Option(None, "--judgements", help="JSONL: {\"query\": ..., "
                                                        "\"relevant\": {\"m_...\": grade} or [ids]} per line."),
              from_feedback: bool = typer.Option(False, "--from-feedback", help="Judgements from the feedback "
                                                 "agents gave on this namespace's searches (helpful = relevant)."),
              driver: List[str] = typer.Option([], "--driver", help="A candidate (repeatable; default: every "
                                               "mounted driver). baseline is always run: the reference."),
              fail_if_worse: Optional[str] = typer.Option(None, "--fail-if-worse", help="Exit 18 when this "
                                                          "driver's nDCG@10 is significantly below baseline's."),
              as_json: bool = JsonOption) -> None:
        """nDCG@10, R@10 and MRR per driver with paired-bootstrap 95% intervals, and each one's
        difference to baseline, over the live namespace read at one instant (nothing is written but
        the run's audit row). A quality gate for CI beside `conformance`."""
        from ..errors import EVAL_WORSE_EXIT, InvalidInputError

        if remote() is not None:
            raise InvalidInputError("eval runs on the local store (unset HALOMEM_URL)")
        if (judgements is None) == (not from_feedback):
            raise InvalidInputError("give --judgements FILE or --from-feedback (one of them)")
        from ..eval import load_judgements
        from ..eval.runner import markdown

        judged = load_judgements(judgements) if judgements is not None else None
        ops = data(ns)
        names = list(driver) or ops.kernel.registry.names()
        if fail_if_worse and fail_if_worse not in names:
            names.append(fail_if_worse)
        report = ops.eval(judged, names)
        if as_json:
            emit_json(report.to_dict())
        else:
            out.print(markdown(report), markup=False, highlight=False)
        if fail_if_worse and report.by_name(fail_if_worse).worse:
            raise typer.Exit(EVAL_WORSE_EXIT)
