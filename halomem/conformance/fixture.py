"""The hermetic fixture: 10 planted facts in conf/a, 5 canaries in the sibling conf/b.

The data file lives in halomem/fixtures/conformance/ and is pinned by checksum, so a certification run
always measures against the same facts.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import ConfigError

FIXTURE_SHA256 = "f9cc2cdf6c38d0086f51a866ffa6bdc64ded95ed5c8b37ded193558218306af6"


@dataclass(frozen=True)
class Fact:
    key: str
    content: str
    question: str


@dataclass(frozen=True)
class FixtureData:
    planted_namespace: str
    canary_namespace: str
    planted: tuple[Fact, ...]
    canaries: tuple[Fact, ...]


def fixture_path() -> Path:
    return Path(str(resources.files("halomem.fixtures").joinpath("conformance/fixture.json")))


def load_fixture(path: Path | None = None) -> FixtureData:
    path = path or fixture_path()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"conformance fixture {path} unreadable: {exc.strerror or exc}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != FIXTURE_SHA256:
        raise ConfigError(f"conformance fixture {path} was modified (sha256 {digest[:12]}..., "
                          f"expected {FIXTURE_SHA256[:12]}...)")
    data = json.loads(raw)
    return FixtureData(data["planted_namespace"], data["canary_namespace"],
                       tuple(Fact(**f) for f in data["planted"]), tuple(Fact(**f) for f in data["canaries"]))
