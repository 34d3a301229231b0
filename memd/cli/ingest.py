"""``memd ingest``: notes and chat transcripts into the vault."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from memd.cli import emit_json, get_memory, json_option

_BAR_MIN_TURNS = 500


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--max-size", default=20, show_default=True, type=click.IntRange(min=1), help="Largest file, in MB.")
@json_option
@click.pass_context
def ingest(ctx: click.Context, files: tuple[Path, ...], max_size: int, as_json: bool) -> None:
    """Ingest FILES: keep a copy under sources/, append extracted entries to CURRENT.

    Reads notes (.md, .txt) and chat transcripts: JSON or JSONL messages with
    role/content/time, Claude Code session JSONL, ChatGPT conversations.json,
    and LoCoMo JSON. Secrets are redacted first. A file ingested before (same
    bytes) is skipped. Exits 1 if any file was rejected.

    \b
    Examples:
        memd ingest meeting-notes.md
        memd ingest ~/.claude/projects/x/session.jsonl conversations.json --json
    """
    from memd.app import Rejected

    memory = get_memory(ctx)
    results: list[dict[str, object]] = []
    rejected = 0
    for path in files:
        try:
            with _progress(path.name, as_json) as progress:
                result = memory.ingest(path, max_bytes=max_size * 1024 * 1024, progress=progress)
        except Rejected as err:
            rejected += 1
            results.append({"name": path.name, "rejected": str(err)})
            if not as_json:
                click.echo(f"memd: {path}: rejected: {err}", err=True)
            continue
        results.append(result.to_json())
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
        if as_json:
            continue
        if result.duplicate:
            click.echo(f"{path}: already ingested as {result.source}; nothing to do")
            continue
        what = f"{result.turns} turns" if result.turns else "note"
        seqs = f" (seq {result.seqs})" if result.seqs else ""
        secrets = f", redacted {', '.join(result.redacted)}" if result.redacted else ""
        click.echo(f"{path}: {result.format}, {what} -> {result.source}, +{result.entries} entries{seqs}{secrets}")
    if as_json:
        emit_json(results)
    if rejected:
        ctx.exit(1)


@contextmanager
def _progress(label: str, quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on a terminal, for transcripts big enough to wait for."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    state: dict[str, object] = {}

    def update(done: int, total: int) -> None:
        if total < _BAR_MIN_TURNS:
            return
        bar = state.get("bar")
        if bar is None:
            bar = click.progressbar(length=total, label=f"ingesting {label}", file=sys.stderr)
            bar.__enter__()
            state["bar"] = bar
        bar.update(done - bar.pos)  # type: ignore[attr-defined]

    try:
        yield update
    finally:
        bar = state.get("bar")
        if bar is not None:
            bar.__exit__(None, None, None)  # type: ignore[attr-defined]
