"""init, remember, ingest, supersede, erase, history."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import ConflictError, InvalidInputError
from .common import JsonOption, NsOption, data, emit_json, err, kernel, out, print_text, store


def _provenance(text: Optional[str]) -> Optional[dict]:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"--provenance is not valid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise InvalidInputError("--provenance must be a JSON object")
    return value


def register(app: typer.Typer) -> None:
    @app.command()
    def init(as_json: bool = JsonOption) -> None:
        """Create (or upgrade) the store: start the embedded server if needed, apply migrations."""
        k = kernel()
        info = {"database": k.engine.url.render_as_string(hide_password=True), "embedder": k.embedder.name,
                "dim": k.embedder.dim, "drivers": k.registry.names(), "reader_role": k.reader_engine is not None}
        if k.reader_engine is None:
            from ..db.inspect import external_status

            err.print(f"halomem: warning: {external_status(k)['reader_advice']}", markup=False)
        if as_json:
            emit_json(info)
        else:
            out.print(f"halomem ready: {info['database']} (embedder {info['embedder']}/{info['dim']}-d)",
                      markup=False)

    @app.command()
    def remember(content: str = typer.Argument(..., help="The memory text ('-' reads it from stdin)."),
                 ns: Optional[str] = NsOption,
                 source: Optional[str] = typer.Option(None, help="Where this came from."),
                 provenance: Optional[str] = typer.Option(None, help="JSON object of provenance."),
                 as_json: bool = JsonOption) -> None:
        """Write one memory into the caller's namespace."""
        if content == "-":
            content = sys.stdin.read().removesuffix("\n")
        made = data(ns, embeds=[content]).remember(content, source=source, provenance=_provenance(provenance))
        emit_json(made.to_dict()) if as_json else out.print(made.id, markup=False)

    @app.command()
    def supersede(old_id: str = typer.Argument(..., help="The chain's current head."),
                  content: str = typer.Argument(..., help="The new version's text."), ns: Optional[str] = NsOption,
                  source: Optional[str] = typer.Option(None, help="Where the new version came from (default: the "
                                                       "old one's source)."),
                  provenance: Optional[str] = typer.Option(None, help="JSON object of provenance for the new "
                                                           "version."),
                  as_json: bool = JsonOption) -> None:
        """Replace a memory: close its validity and link the new head (a lost race exits 5)."""
        made = data(ns).supersede(old_id, content, source=source, provenance=_provenance(provenance))
        emit_json({**made.to_dict(), "supersedes": old_id}) if as_json else out.print(made.id, markup=False)

    @app.command()
    def erase(memory_id: str = typer.Argument(..., help="The memory to erase (any version of a chain)."),
              ns: Optional[str] = NsOption,
              reason: str = typer.Option("", help="Recorded in the audit trail."),
              chain: bool = typer.Option(False, "--chain", help="Every version of its supersedence chain (else "
                                         "earlier values stay readable in history and as-of)."),
              purge: bool = typer.Option(False, "--purge", help="Then rewrite the table files so no copy of the "
                                         "erased text survives on disk (WAL and backups excepted; local only)."),
              as_json: bool = JsonOption) -> None:
        """Erase a memory's content, vector, source and provenance for good (a tombstone and an audit row stay)."""
        from ..results import Erased
        from .common import remote

        if purge and remote():
            raise InvalidInputError("--purge is an operator command: run it where the database is local")
        ops = data(ns)
        try:
            erased = ops.erase(memory_id, reason=reason, chain=chain)
        except ConflictError as exc:
            if not purge or "already erased" not in str(exc):
                raise
            erased = Erased(memory_id, str(ops.namespace))  # erased before (by an agent?): purge it now
            err.print(f"halomem: {exc}; purging", markup=False)
        not_done = store("erase --purge").purge() if purge else []
        for sentence in not_done:
            err.print(f"halomem: warning: purge: {sentence}", markup=False)
        if as_json:
            emit_json({**erased.to_dict(), "purged": purge, "purge_not_done": not_done})
        else:
            more = len(erased.versions) - 1
            out.print(f"erased {memory_id}" + (f" and {more} earlier version(s)" if more > 0 else ""), markup=False)

    @app.command()
    def history(memory_id: str = typer.Argument(..., help="Any version of the chain."), ns: Optional[str] = NsOption,
                as_json: bool = JsonOption) -> None:
        """Show the supersedence chain through a memory, oldest first."""
        chain = data(ns).history(memory_id)
        if as_json:
            emit_json(chain)
            return
        for row in chain:
            state = "erased" if row.erased_at else ("current" if row.t_valid_to is None else "superseded")
            until = f"{row.t_valid_to:%Y-%m-%d %H:%M:%S}" if row.t_valid_to else "now"
            out.print(f"{row.id}  {state}  {row.t_valid_from:%Y-%m-%d %H:%M:%S} -> {until}  {row.namespace}")
            print_text(row.content or "(erased)")

    @app.command()
    def ingest(paths: List[Path] = typer.Argument(..., help="Folders and files: documents (Markdown, text, "
                                                  "reStructuredText, HTML, PDF; folders are walked), or one "
                                                  ".jsonl/.csv file of records, or '-' for records on stdin."),
               ns: Optional[str] = NsOption,
               fmt: Optional[str] = typer.Option(None, "--format", help="jsonl or csv (records), chat (turns "
                                                 "of conversations), or a document format (markdown, text, rst, "
                                                 "html, pdf) read whatever the file names say."),
               include: List[str] = typer.Option([], "--include", help="Documents: only paths matching this glob "
                                                 "(repeatable), e.g. '*.md' or 'guides/**'."),
               exclude: List[str] = typer.Option([], "--exclude", help="Documents: leave out paths matching this "
                                                 "glob (repeatable)."),
               prune: bool = typer.Option(False, "--prune", help="Documents: retire the memories of files gone "
                                          "from the folder (validity closed; history and as-of keep them)."),
               strict: bool = typer.Option(False, "--strict", help="Documents: refuse the whole run if any file "
                                           "cannot be read (instead of skipping it with its reason)."),
               dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be written, superseded, "
                                            "retired and skipped; write nothing."),
               root_name: Optional[str] = typer.Option(None, "--root-name", help="Documents: the name keys start "
                                                       "with (default: the folder's own name)."),
               skip_bad: bool = typer.Option(False, "--skip-bad", help="Records: skip bad lines instead of "
                                             "refusing the file."),
               extract: bool = typer.Option(False, "--extract", help="Conversations: then have the chat model "
                                            "(HALOMEM_LLM_URL, HALOMEM_LLM_MODEL) extract facts from each session "
                                            "with new turns; exit 19 if any session's extraction failed."),
               as_json: bool = JsonOption) -> None:
        """Bring knowledge in: documents (one memory per file, keyed by its path: re-running writes only
        what changed), conversations (--format chat: one memory per turn) or records (JSONL/CSV, one
        transaction)."""
        kind = _ingest_kind(paths, fmt)
        if extract and kind != "chat":
            raise InvalidInputError("--extract is for conversations: --format chat")
        if kind == "records":
            _ingest_records(paths[0], ns, fmt, skip_bad, as_json)
        elif kind == "chat":
            _ingest_chat(paths, ns, skip_bad, extract, as_json)
        else:
            _ingest_documents(paths, ns, fmt, include, exclude, prune, strict, dry_run, root_name, as_json)


RECORD_FORMATS = ("jsonl", "ndjson", "json", "csv")


def _ingest_kind(paths: List[Path], fmt: Optional[str]) -> str:
    """records (one JSONL/CSV file, or stdin), chat (--format chat), or documents (anything else)."""
    if fmt == "chat":
        return "chat"
    records = [p for p in paths if str(p) == "-" or p.suffix.lower().lstrip(".") in RECORD_FORMATS]
    if (fmt or "").lower() in RECORD_FORMATS or records:
        if len(paths) != 1:
            raise InvalidInputError("records (JSONL/CSV) are ingested one file at a time, apart from documents")
        return "records"
    return "documents"


def _ingest_chat(paths: List[Path], ns: Optional[str], skip_bad: bool, extract: bool, as_json: bool) -> None:
    if len(paths) != 1:
        raise InvalidInputError("conversations (--format chat) are ingested one file at a time")
    path = paths[0]
    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    ops = data(ns)
    with _bar(as_json) as bar:
        task = bar.add_task("embedding turns", total=None)
        report = ops.ingest_bytes(raw, fmt="chat", skip_bad=skip_bad, label=path.name if str(path) != "-" else "stdin",
                                  extract=extract, on_parsed=lambda n: bar.update(task, total=n),
                                  progress=lambda n: bar.advance(task, n),
                                  on_write=lambda: bar.update(task, description="writing turns, then extracting"
                                                              if extract else "writing turns", total=None))
    for line, reason in report.skipped:
        err.print(f"halomem: skipped {path}:{line}: {reason}", markup=False)
    if as_json:
        emit_json(report.to_dict())
    else:
        unchanged = f", {len(report.unchanged)} unchanged" if report.unchanged else ""
        out.print(f"ingested {report.written} turns into {report.namespace}{unchanged}", markup=False)
    if report.extraction is not None:
        from .formation_cmds import show_extraction

        show_extraction(report.extraction, as_json)


def _bar(as_json: bool):  # noqa: ANN202 - rich.progress.Progress
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=err._get(), transient=True, disable=as_json or not err.is_terminal)


def _ingest_records(path: Path, ns: Optional[str], fmt: Optional[str], skip_bad: bool, as_json: bool) -> None:
    ops = data(ns)
    if str(path) == "-":  # stdin: JSONL unless --format csv
        report = ops.ingest_bytes(sys.stdin.buffer.read(), fmt=(fmt or "jsonl").lower(), skip_bad=skip_bad,
                                  label="stdin")
        path = Path("stdin")
    else:
        with _bar(as_json) as bar:
            task = bar.add_task("embedding", total=None)
            report = ops.ingest_file(path, fmt=fmt, skip_bad=skip_bad,
                                     on_parsed=lambda n: bar.update(task, total=n),
                                     progress=lambda n: bar.advance(task, n),
                                     on_write=lambda: bar.update(task, description="writing (one transaction)",
                                                                 total=None))
    for line, reason in report.skipped:
        err.print(f"halomem: skipped {path}:{line}: {reason}", markup=False)
    if as_json:
        emit_json(report.to_dict())
    else:
        notes = [f"{len(report.unchanged)} unchanged"] if report.unchanged else []
        notes += [f"{len(report.superseded)} superseded"] if report.superseded else []
        notes += [f"{len(report.skipped)} bad lines skipped"] if report.skipped else []
        out.print(f"ingested {report.written} memories into {report.namespace}"
                  + (f" ({', '.join(notes)})" if notes else ""), markup=False)


def _ingest_documents(paths: List[Path], ns: Optional[str], fmt: Optional[str], include: List[str],
                      exclude: List[str], prune: bool, strict: bool, dry_run: bool, root_name: Optional[str],
                      as_json: bool) -> None:
    from ..intake.files import collect
    from ..intake.formats import FORMATS

    if fmt is not None and fmt not in set(FORMATS.values()):
        raise InvalidInputError(f"--format {fmt!r}: jsonl, csv, chat, or one of {', '.join(sorted(set(FORMATS.values())))}")
    roots, files = collect(paths, include, exclude, root_name)
    ops = data(ns)
    with _bar(as_json) as bar:
        task = bar.add_task("reading and embedding documents", total=len(files))
        report = ops.ingest_documents(roots, files, fmt=fmt, prune=prune, strict=strict, dry_run=dry_run,
                                      progress=lambda n: bar.advance(task, n))
    shown = report if isinstance(report, dict) else report.to_dict()
    for skipped in shown["skipped"]:
        err.print(f"halomem: skipped {skipped['path']}: {skipped['reason']}", markup=False)
    if as_json:
        emit_json(shown)
        return
    counts = shown["counts"]
    verb = "would ingest" if dry_run else "ingested"
    out.print(f"{verb} {len(files)} files into {shown['namespace']}: {counts['written']} written "
              f"({counts['superseded']} superseded), {counts['unchanged']} unchanged, {counts['retired']} retired, "
              f"{counts['skipped']} skipped", markup=False)
