"""Which files a document ingest reads: the roots it was given, walked with include and exclude
globs, each file named by its path relative to its root.

A directory is a root (named after itself); a file given alone belongs to the root of its folder, so
`halomem ingest docs/` and `halomem ingest docs/a.md` name `a.md` alike: `docs/a.md`. Nothing here
follows a symbolic link out of a root, and a file that cannot be read is reported, never raised.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator, Sequence

from ..errors import IngestError
from ..limits import MAX_FILES, MAX_RELATIVE_PATH_CHARS, MAX_ROOT_NAME_CHARS
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".tox"})


@dataclass(frozen=True)
class SourceFile:
    """One file of a root: its path relative to the root ('/'-separated), and its bytes (None, with
    ``error``, when it could not be read)."""

    root: str
    path: str
    data: bytes | None
    modified: float | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.root}/{self.path}"


@dataclass(frozen=True)
class Root:
    """A root as given: its name (keys start with it) and whether all its files were given (a
    walked folder, an upload of a whole folder): only then may --prune retire the memories of files
    not among them (a file given alone never retires its neighbours)."""

    name: str
    whole: bool


def matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether a relative path matches a glob (`*.md`, `guides/**`, `drafts/*`): against the whole
    path, and a pattern without '/' against the file name too."""
    name = PurePosixPath(path).name
    for pattern in patterns:
        if fnmatch.fnmatchcase(path, pattern) or ("/" not in pattern and fnmatch.fnmatchcase(name, pattern)):
            return True
        if pattern.endswith("/**") and (path + "/").startswith(pattern[:-2]):
            return True
    return False


def collect(paths: Sequence[Path], include: Sequence[str] = (), exclude: Sequence[str] = (),
            root_name: str | None = None) -> tuple[list[Root], list[SourceFile]]:
    """The roots and files of ``paths`` (in path order within each root)."""
    if root_name is not None and len(paths) != 1:
        raise IngestError("--root-name names the root of one PATH: give one")
    roots: list[Root] = []
    files: list[SourceFile] = []
    for given in paths:
        if not given.exists():
            raise IngestError(f"{given}: no such file or directory")
        absolute = given.resolve()
        folder = absolute if absolute.is_dir() else absolute.parent
        name = check_root_name(root_name or folder.name or "root")
        if absolute.is_dir():
            roots.append(Root(name, True))
            listed = sorted(_walk(absolute))
        else:
            roots.append(Root(name, False))
            listed = [absolute.name]
        for rel in listed:
            if include and not matches(rel, include) or exclude and matches(rel, exclude):
                continue
            files.append(_read(name, folder, rel))
            if len(files) > MAX_FILES:
                raise IngestError(f"more than {MAX_FILES} files: ingest the tree in parts (or narrow it: --include)")
    return roots, files


def check_root_name(name: str) -> str:
    if (not isinstance(name, str) or "/" in name or not name.strip() or len(name) > MAX_ROOT_NAME_CHARS
            or not name.isprintable()):
        raise IngestError(f"root name {str(name)[:100]!r} must be 1-{MAX_ROOT_NAME_CHARS} printable characters"
                          " without '/'")
    return name


def check_relative(path: str) -> str:
    """An uploaded file's name as a path under its root: relative, '/'-separated, no '..', printable."""
    clean = path.replace("\\", "/").strip()
    parts = [p for p in clean.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or clean.startswith("/") or len(clean) > MAX_RELATIVE_PATH_CHARS or not clean.isprintable():
        raise IngestError(f"file name {path[:100]!r} is not a relative path under the root")
    return "/".join(parts)


def _walk(folder: Path) -> Iterator[str]:
    """Relative paths of the regular files under ``folder``; symbolic links are not followed."""
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in names:
            full = Path(top) / name
            if full.is_file() and not full.is_symlink():
                yield full.relative_to(folder).as_posix()


def _read(root: str, folder: Path, rel: str) -> SourceFile:
    from .formats import MAX_DOCUMENT_BYTES

    path = folder / rel
    try:
        stat = path.stat()
        if stat.st_size > MAX_DOCUMENT_BYTES:
            return SourceFile(root, rel, None, stat.st_mtime, f"larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MiB")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return SourceFile(root, rel, None, error=f"unreadable ({exc.strerror or type(exc).__name__})")
    return SourceFile(root, rel, data, stat.st_mtime)
