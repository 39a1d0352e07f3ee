"""Running the six checks against one hermetic fixture (reusable across several drivers)."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from ..config import Settings
from ..db.embedded import ephemeral_server
from ..index import Scope
from ..planning import PlanFailed, run_driver
from ..types import Namespace, RetrieverDriver
from . import checks
from .checks import CHECK_IDS, Call, Report
from .fixture import FixtureData, load_fixture
from .loader import is_builtin, load_driver

DRAFT_MARK = "(draft, superseded)"


class ConformanceKit:
    """An ephemeral embedded PostgreSQL with the fixture planted; call certify() per driver."""

    def __init__(self, kernel, fixture: FixtureData, planted: dict[str, str], canaries: dict[str, str],
                 superseded: dict[str, str]) -> None:
        self.kernel = kernel
        self.fixture = fixture
        self.planted = planted
        self.canaries = canaries
        self.superseded = superseded  # each planted fact's earlier draft: no longer valid, never to be returned
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
                # each planted fact supersedes a draft that says nearly the same: a driver that ranks
                # rows its view did not admit as valid now returns the draft
                superseded = {f.key: kernel.remember(fixture.planted_namespace, f"{f.content} {DRAFT_MARK}",
                                                     source="conformance").id for f in fixture.planted}
                planted = {f.key: kernel.supersede(fixture.planted_namespace, superseded[f.key], f.content,
                                                   source="conformance").id for f in fixture.planted}
                canaries = {f.key: kernel.remember(fixture.canary_namespace, f.content, source="conformance").id
                            for f in fixture.canaries}
                yield cls(kernel, fixture, planted, canaries, superseded)
            finally:
                kernel.close()

    def _planner(self, driver: RetrieverDriver):  # noqa: ANN202
        def plan(query: str, k: int, budget: int) -> Call:
            with self.kernel.index.reader() as reader:
                try:
                    run = run_driver(reader, self.scope, self.kernel.embedders, driver, query, k, budget)
                except PlanFailed as exc:
                    raise exc.cause from None  # the check reports what the driver raised
            return Call(run.returned, frozenset(r.ref for r in run.admitted), run.ms)

        return plan

    def certify(self, driver: RetrieverDriver, source_path: Path | None = None, *,
                latency_budget_ms: float | None = None, origin: str = "", isolation: str = "in-process") -> Report:
        plan = self._planner(driver)
        fx = self.fixture
        report = Report(getattr(driver, "name", type(driver).__name__), origin or type(driver).__module__,
                        isolation=isolation)
        report.checks = [
            checks.finds_planted_fact(plan, fx, self.planted),
            checks.respects_scoped_view(plan, fx, self.canaries, self.superseded),
            checks.latency_envelope(plan, fx, latency_budget_ms),
            checks.budget_discipline(plan, fx, self.true_content),
            checks.read_only(source_path),
            checks.deterministic_k(plan, fx),
        ]
        return report


def certify(target: str | RetrieverDriver, source_path: Path | None = None, *,
            latency_budget_ms: float | None = None, isolate_builtins: bool = False) -> Report:
    """One-shot: open a fixture and run the six checks.

    A name or path other than halomem's own drivers is certified as production runs it: the static
    scan first (a file that fails it is never executed: the other checks are not run), then the
    checks against the driver in a sandboxed worker. An object is certified in-process.
    """
    if isinstance(target, str) and (isolate_builtins or not is_builtin(target)):
        return certify_isolated(target, source_path, latency_budget_ms=latency_budget_ms)
    if isinstance(target, str):
        loaded = load_driver(target)
        driver, source_path, origin = loaded.driver, source_path or loaded.source_path, loaded.origin
        isolation = "in-process (halomem's own driver)"
    else:
        driver, origin, isolation = target, type(target).__module__, "in-process (object supplied by the caller)"
    with ConformanceKit.open() as kit:
        return kit.certify(driver, source_path, latency_budget_ms=latency_budget_ms, origin=origin,
                           isolation=isolation)


NOT_EXECUTED = "not run: the cartridge failed the static scan, so it was never executed"


def certify_isolated(target: str, source_path: Path | None = None, *, latency_budget_ms: float | None = None,
                     limits=None) -> Report:  # noqa: ANN001 - sandbox.isolated.Limits
    from ..sandbox import cartridge as carts
    from ..sandbox.isolated import IsolatedDriver

    cartridge = _cartridge(target, carts)
    scan_path = source_path or cartridge.source_path
    scanned = checks.read_only(scan_path)
    if not scanned.passed:
        detail = scanned.detail if scanned.passed is False else "no source file found to scan: not executed"
        report = Report(cartridge.name, target, isolation="not executed")
        report.checks = [checks.CheckResult(cid, None, NOT_EXECUTED) for cid in CHECK_IDS]
        report.checks[4] = checks.CheckResult(CHECK_IDS[4], False, detail)
        return report
    from ..drivers import DriverUnavailableError
    from ..errors import DriverError

    driver = IsolatedDriver(cartridge, limits)
    try:
        with ConformanceKit.open() as kit:
            try:
                driver.capabilities()  # start the worker: its confinement goes into the report
            except DriverUnavailableError as exc:
                raise DriverError(f"{target}: {exc}") from None
            report = kit.certify(driver, scan_path, latency_budget_ms=latency_budget_ms, origin=target,
                                 isolation=f"isolated worker: {driver.confinement}")
            report.driver = driver.reported_name or report.driver
            return report
    finally:
        driver.close()


def _cartridge(target: str, carts):  # noqa: ANN001, ANN202
    from ..errors import DriverError

    if target.endswith(".py") or "/" in target:
        return carts.from_path(Path(target))
    if is_builtin(target):
        return carts.from_module(f"halomem.drivers.{target}", target)
    ep = carts.find_entry_point(target)
    if ep is None:
        raise DriverError(f"no driver named {target!r} (not in halomem/drivers/, not a .py path, not an entry point)")
    return carts.from_entry_point(ep)
