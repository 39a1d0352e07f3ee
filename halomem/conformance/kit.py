"""Running the six checks against one hermetic fixture (reusable across several drivers)."""
from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Iterator

from ..config import Settings
from ..db.embedded import ephemeral_server
from ..drivers.view import admitted_refs, build_scoped_view
from ..index import Scope
from ..types import Namespace, RetrieverDriver, RetrieverQuery, ScoredRef
from . import checks
from .checks import Call, Report
from .fixture import FixtureData, load_fixture
from .loader import load_driver


class ConformanceKit:
    """An ephemeral embedded PostgreSQL with the fixture planted; call certify() per driver."""

    def __init__(self, kernel, fixture: FixtureData, planted: dict[str, str], canaries: dict[str, str]) -> None:
        self.kernel = kernel
        self.fixture = fixture
        self.planted = planted
        self.canaries = canaries
        self.true_content = {ref: f.content for f in fixture.planted for k, ref in planted.items() if k == f.key}
        self.true_content.update({ref: f.content for f in fixture.canaries
                                  for k, ref in canaries.items() if k == f.key})
        self.scope = Scope(Namespace(fixture.planted_namespace))

    @classmethod
    @contextlib.contextmanager
    def open(cls) -> Iterator["ConformanceKit"]:
        from ..kernel import Kernel

        fixture = load_fixture()
        with ephemeral_server(prefix="halomem-conformance-") as url:
            kernel = Kernel.boot(Settings(home=Path("/nonexistent-halomem-home"), database_url=url, embedder="hash"),
                                 mount_plugins=False)
            try:
                planted = {f.key: kernel.remember(fixture.planted_namespace, f.content, source="conformance").id
                           for f in fixture.planted}
                canaries = {f.key: kernel.remember(fixture.canary_namespace, f.content, source="conformance").id
                            for f in fixture.canaries}
                yield cls(kernel, fixture, planted, canaries)
            finally:
                kernel.close()

    def _planner(self, driver: RetrieverDriver):  # noqa: ANN202
        def plan(query: str, k: int, budget: int) -> Call:
            with self.kernel.index.reader() as reader:
                view = build_scoped_view(reader, self.scope, self.kernel.embedder)
                started = time.perf_counter()
                refs = driver.plan(RetrieverQuery(query=query, view=view, token_budget=budget, k=k))
                ms = (time.perf_counter() - started) * 1000
                if not isinstance(refs, list) or not all(isinstance(r, ScoredRef) for r in refs):
                    raise TypeError("plan() must return a list of ScoredRef")
                return Call(refs, admitted_refs(view), ms)

        return plan

    def certify(self, driver: RetrieverDriver, source_path: Path | None = None, *,
                latency_budget_ms: float | None = None, origin: str = "") -> Report:
        plan = self._planner(driver)
        fx = self.fixture
        report = Report(getattr(driver, "name", type(driver).__name__), origin or type(driver).__module__)
        report.checks = [
            checks.finds_planted_fact(plan, fx, self.planted),
            checks.respects_scoped_view(plan, fx, self.canaries),
            checks.latency_envelope(plan, fx, latency_budget_ms),
            checks.budget_discipline(plan, fx, self.true_content),
            checks.read_only(source_path),
            checks.deterministic_k(plan, fx),
        ]
        return report


def certify(target: str | RetrieverDriver, source_path: Path | None = None, *,
            latency_budget_ms: float | None = None) -> Report:
    """One-shot: load (if given a name or path), open a fixture, run the six checks."""
    if isinstance(target, str):
        loaded = load_driver(target)
        driver, source_path, origin = loaded.driver, source_path or loaded.source_path, loaded.origin
    else:
        driver, origin = target, type(target).__module__
    with ConformanceKit.open() as kit:
        return kit.certify(driver, source_path, latency_budget_ms=latency_budget_ms, origin=origin)
