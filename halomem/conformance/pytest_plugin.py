"""Opt-in pytest plugin: run the same six checks inside a cartridge author's own test suite.

    # conftest.py
    pytest_plugins = ["halomem.conformance.pytest_plugin"]

    # test_my_driver.py
    def test_my_driver_is_conformant(halomem_certify):
        report = halomem_certify(MyDriver(), source_path=Path(my_driver.__file__))
        assert report.ok, report.to_dict()

The hermetic fixture (an ephemeral embedded PostgreSQL) is started once per test session.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from .checks import Report
from .kit import ConformanceKit


@pytest.fixture(scope="session")
def halomem_conformance_kit() -> ConformanceKit:
    with ConformanceKit.open() as kit:
        yield kit


@pytest.fixture()
def halomem_certify(halomem_conformance_kit: ConformanceKit) -> Callable[..., Report]:
    def certify(driver, source_path: Path | str | None = None, *,  # noqa: ANN001
                latency_budget_ms: float | None = None) -> Report:
        return halomem_conformance_kit.certify(driver, Path(source_path) if source_path else None,
                                               latency_budget_ms=latency_budget_ms)

    return certify
