"""The CLI's remote mode: halomem_client's Client (the one client) under the names and types the
in-process ``halomem.ops.Operations`` answers with, so a data command reads the same either way.
Only what differs is here: a policy as ``Policy``, concept hits as ``ScoredRef``, tokens as
``Principal``/``IssuedToken``, documents from folders (one upload per root), a JSONL/CSV file
from disk. Nothing here imports the database stack."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from halomem_client import Client

from .errors import IngestError
from .results import IngestReport


class RemoteOperations(Client):
    @classmethod
    def for_cli(cls, url: str, token: str) -> "RemoteOperations":
        return cls(url, token, direct=True)

    def concepts(self, query: str, k: int = 10) -> list[Any]:  # type: ignore[override]
        from .types import ScoredRef

        return [ScoredRef(**h) for h in super().concepts(query, k)]

    def effective_policy(self, target: Any = None) -> Any:  # type: ignore[override]
        from .policy.model import Policy

        return Policy.from_effective_json(super().effective_policy(None if target is None else str(target)))

    def set_policy(self, target: Any, policy: dict[str, Any], *, allow_unmounted: bool = False) -> Any:  # type: ignore[override]
        from .policy.model import Policy

        return Policy.from_effective_json(super().set_policy(None if target is None else str(target), policy,
                                                             allow_unmounted=allow_unmounted))

    def clear_policy(self, target: Any) -> bool:  # type: ignore[override]
        return super().clear_policy(None if target is None else str(target))

    def create_token(self, target: Any, name: str, scopes: Any, expires_in: Any = None) -> Any:  # type: ignore[override]
        from .auth.principal import IssuedToken, Principal

        issued = super().create_token(None if target is None else str(target), name, scopes, expires_in)
        return IssuedToken(Principal.from_public(issued), issued["token"])

    def list_tokens(self) -> list[Any]:  # type: ignore[override]
        from .auth.principal import Principal

        return [Principal.from_public(p) for p in super().list_tokens()]

    def revoke_token(self, principal_id: str) -> Any:  # type: ignore[override]
        from .auth.principal import Principal

        return Principal.from_public(super().revoke_token(principal_id))

    def ingest_documents(self, roots: Sequence[Any], files: Sequence[Any], *, fmt: str | None = None,
                         prune: bool = False, strict: bool = False, dry_run: bool = False,
                         progress: Any = None, **_: Any) -> dict[str, Any]:
        """Each root's files (intake.files.SourceFile) in one upload; one report (every root's
        DocumentsJSON merged), with the files that could not be read here listed as skipped."""
        merged: dict[str, Any] = {}
        for root in roots:
            mine = [f for f in files if f.root == root.name]
            unreadable = [{"path": f.key, "reason": f.error or "unreadable"} for f in mine if f.data is None]
            if strict and unreadable:
                raise IngestError(f"{len(unreadable)} file(s) cannot be read: {unreadable[0]['path']}: "
                                  f"{unreadable[0]['reason']}; nothing was ingested (--strict)")
            readable = [(f.path, f.data) for f in mine if f.data is not None]
            report = self.upload_documents(readable, root=root.name, fmt=fmt, prune=prune and root.whole,
                                           strict=strict, dry_run=dry_run) if readable else {"skipped": []}
            report["skipped"] = unreadable + report.get("skipped", [])
            for key, value in report.items():
                if isinstance(value, list):
                    merged.setdefault(key, []).extend(value)
                elif key != "counts":
                    merged[key] = value
            if progress:
                progress(len(mine))
        merged["counts"] = {k: len(merged.get(k, [])) for k in ("written", "unchanged", "superseded", "retired",
                                                                "skipped")}
        merged.setdefault("namespace", self.namespace)
        return merged

    def ingest_bytes(self, raw: bytes, *, fmt: str = "jsonl", skip_bad: bool = False, label: str = "body.jsonl",
                     extract: bool = False, **_: Any) -> IngestReport:  # type: ignore[override]
        """The one upload (the in-process progress callbacks have nothing to follow here)."""
        return super().ingest_bytes(raw, fmt=fmt, skip_bad=skip_bad, label=label, extract=extract)

    def ingest_file(self, path: Path, *, fmt: str | None = None, skip_bad: bool = False, **_: Any) -> IngestReport:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise IngestError(f"cannot read {path}: {exc.strerror or exc}") from None
        fmt = (fmt or Path(path).suffix.lstrip(".") or "jsonl").lower()
        return self.ingest_bytes(raw, fmt="csv" if fmt == "csv" else "jsonl", skip_bad=skip_bad, label=str(path))
