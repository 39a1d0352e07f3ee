"""What a worker loads, described as data, and the loading itself.

The kernel describes a cartridge (a .py path, an entry point, a module) without importing it:
an entry point's source file is found in its distribution's file list, never by import, so not a
line of untrusted code runs in the kernel's process. The worker loads it, after confinement.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import DriverError

ENTRY_POINT_GROUP = "halomem.drivers"


@dataclass(frozen=True)
class Cartridge:
    kind: str  # "path" | "entry_point" | "module"
    value: str  # a file path | an entry-point name | a dotted module
    name: str  # the name it is mounted under
    source_path: Path | None = None  # what the static scan reads
    read_paths: tuple[str, ...] = ()  # beyond the interpreter and halomem: the files it may read
    net_ports: tuple[int, ...] = ()  # TCP ports it may connect to (declared network need)
    init_args: tuple[str, ...] = field(default_factory=tuple)
    sys_path: tuple[str, ...] = ()  # import roots to add (a plugin installed outside site-packages)
    version: str = ""  # what the kernel knows it by: its distribution's version, or a file's digest

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "name": self.name, "init_args": list(self.init_args),
                "sys_path": list(self.sys_path)}


def from_path(path: Path) -> Cartridge:
    path = path.resolve()
    if not path.is_file():
        raise DriverError(f"no driver file {path}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return Cartridge("path", str(path), path.stem, path, (str(path),), version=f"sha256:{digest}")


def from_entry_point(ep: EntryPoint) -> Cartridge:
    """Its module's file, package and metadata folder, found from the distribution, never imported."""
    module = ep.value.split(":", 1)[0].strip()
    source, reads = _distribution_files(ep, module)
    dist = ep.dist
    meta = getattr(dist, "_path", None)  # the .dist-info folder, which entry-point lookup reads
    location = str(Path(dist.locate_file("")).resolve()) if dist else ""
    extra = (str(meta),) if meta else ()
    return Cartridge("entry_point", ep.name, ep.name, source, reads + extra,
                     sys_path=(location,) if location else (), version=dist.version if dist else "")


def from_module(module: str, name: str, *, init_args: tuple[str, ...] = (), net_ports: tuple[int, ...] = ()) -> Cartridge:
    spec = importlib.util.find_spec(module)  # halomem's own modules only: importing their parents is safe
    origin = Path(spec.origin) if spec and spec.origin else None
    from .. import __version__

    return Cartridge("module", module, name, origin, (), net_ports, init_args, version=__version__)


def find_entry_point(name: str) -> EntryPoint | None:
    return next((ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name), None)


def _distribution_files(ep: EntryPoint, module: str) -> tuple[Path | None, tuple[str, ...]]:
    """The module's file and its top-level package folder, from the distribution's RECORD."""
    dist = ep.dist
    parts = module.split(".")
    wanted = ["/".join(parts) + ".py", "/".join(parts) + "/__init__.py"]
    source = None
    for f in (dist.files or []) if dist else []:
        if str(f).replace("\\", "/") in wanted:
            source = Path(dist.locate_file(f)).resolve()
            break
    if source is None and dist is not None:  # no RECORD: look where the import system would
        found = [Path(dist.locate_file(w)) for w in wanted if Path(dist.locate_file(w)).is_file()]
        source = found[0].resolve() if found else None
    if source is None:
        return None, ()
    top = source
    for _ in range(len(parts) - (0 if source.name == "__init__.py" else 1)):
        top = top.parent
    return source, (str(top if top.is_dir() and top != source else source),)


# --- loading (in the worker, after confinement; the conformance kit's in-process path too) ---------
def needs_arguments(cls: type) -> str | None:
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    required = [p.name for p in sig.parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return ", ".join(required) or None


def _is_driver_like(obj: Any) -> bool:
    return callable(getattr(obj, "plan", None))


def pick_driver(module: ModuleType, origin: str) -> Any:
    """The first zero-argument-constructible class with plan() (definition order), or a ready instance."""
    skipped: list[str] = []
    for name, obj in list(vars(module).items()):
        if name.startswith("_"):
            continue
        if isinstance(obj, type):
            if obj.__module__ != module.__name__ or not _is_driver_like(obj):
                continue
            needs = needs_arguments(obj)
            if needs:
                skipped.append(f"{name} needs constructor arguments ({needs})")
                continue
            try:
                return obj()
            except Exception as exc:
                raise DriverError(f"{origin}: driver class {name} could not be constructed: "
                                  f"{type(exc).__name__}: {exc}") from None
        elif _is_driver_like(obj) and not inspect.ismodule(obj) and not inspect.isfunction(obj):
            return obj
    why = "; ".join(skipped) if skipped else "no class with plan() and no ready-made instance"
    raise DriverError(f"{origin}: not loadable: {why}")


def module_from_path(path: Path) -> ModuleType:
    name = f"halomem_cartridge_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise DriverError(f"{path}: not a loadable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise DriverError(f"{path}: import failed: {type(exc).__name__}: {exc}") from None
    return module


def instantiate_entry_point(ep: EntryPoint) -> Any:
    try:
        obj = ep.load()
    except Exception as exc:
        raise DriverError(f"entry point {ep.name!r}: load failed: {type(exc).__name__}: {exc}") from None
    if isinstance(obj, type):
        needs = needs_arguments(obj)
        if needs:
            raise DriverError(f"entry point {ep.name!r}: not loadable: {obj.__name__} needs constructor "
                              f"arguments ({needs})")
        obj = obj()
    return obj


def load(spec: dict[str, Any]) -> Any:
    """Instantiate the driver a spec describes (runs cartridge code: call it only when confined)."""
    kind, value = spec["kind"], spec["value"]
    if kind == "path":
        return pick_driver(module_from_path(Path(value)), value)
    if kind == "entry_point":
        ep = find_entry_point(value)
        if ep is None:
            raise DriverError(f"no entry point {value!r} in group {ENTRY_POINT_GROUP}")
        return instantiate_entry_point(ep)
    if kind == "module":
        module = importlib.import_module(value)
        if spec.get("init_args"):
            classes = [o for o in vars(module).values()
                       if isinstance(o, type) and o.__module__ == module.__name__ and _is_driver_like(o)]
            return classes[0](*spec["init_args"])
        return pick_driver(module, value)
    raise DriverError(f"unknown cartridge kind {kind!r}")
