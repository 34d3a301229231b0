"""Vault basics: init, add, show, status, lint."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..config import Config
from . import emit_json, get_vault, json_option

_RESERVED_KEYS = {"seq", "time", "source", "src"}


@click.command()
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@json_option
def init(path: Path, as_json: bool) -> None:
    """Create a vault at PATH (default: here); existing files are kept.

    Runs `git init` too unless PATH is already inside a git repository.

    \b
    Example:
        memd init ~/memory
    """
    from ..vault import init_vault

    result = init_vault(path)
    if as_json:
        emit_json(
            {"vault": str(result.vault.root), "created": list(result.created), "git_init": result.git_initialised}
        )
        return
    if not result.created:
        click.echo(f"{result.vault.root} is already a memd vault; nothing changed")
        return
    click.echo(f"created vault at {result.vault.root}")
    for name in result.created:
        click.echo(f"  + {name}")
    if result.git_initialised:
        click.echo("  + git repository")


@click.command()
@click.argument("text", required=False)
@click.option("--one", is_flag=True, help="Treat all of the text as one entry (default: one per non-empty line).")
@click.option("--time", "when", metavar="ISO", help="When it happened (ISO 8601; default: now).")
@click.option("--source", default="user", show_default=True, help="Who said it: user, ai, hand, import:NAME...")
@click.option("--src", metavar="REF", help="Provenance: a path#anchor or an id in an imported dataset.")
@click.option("--meta", multiple=True, metavar="KEY=VALUE", help="Extra signature key (repeatable).")
@json_option
@click.pass_context
def add(
    ctx: click.Context,
    text: str | None,
    one: bool,
    when: str | None,
    source: str,
    src: str | None,
    meta: tuple[str, ...],
    as_json: bool,
) -> None:
    """Append TEXT to the CURRENT.md buffer as new entries.

    Without TEXT (or with -), reads standard input.

    \b
    Examples:
        memd add "Allergic to peanuts" --source user
        git log -1 --format=%s | memd add --source import:git
        memd add --one --time 2026-11-20 < meeting-notes.txt
    """
    from ..buffer import NewEntry, append_entries

    if text is None or text == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("give TEXT, or pipe text on standard input")
        text = sys.stdin.read()
    extra = tuple(_parse_meta(item) for item in meta)
    pieces = [text] if one else text.splitlines()
    items = [NewEntry(p, when, source, src, extra) for p in pieces if p.strip()]
    vault = get_vault(ctx)
    added = append_entries(vault, items)
    if as_json:
        emit_json([
            {"seq": a.seq, "path": "CURRENT.md", "line": a.line, "signature": a.signature, "text": a.text}
            for a in added
        ])
        return
    for item in added:
        click.echo(f"CURRENT.md:{item.line}: {item.signature} {_clip(item.text)}")


def _parse_meta(item: str) -> tuple[str, str]:
    key, eq, value = item.partition("=")
    if not eq or not key:
        raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--meta")
    if key in _RESERVED_KEYS:
        raise click.BadParameter(f"use --{key} to set {key}", param_hint="--meta")
    return key, value


def _clip(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


@click.command()
@click.argument("doc", required=False, default="CURRENT")
@json_option
@click.pass_context
def show(ctx: click.Context, doc: str, as_json: bool) -> None:
    """Print CURRENT.md or a topic document (by id or path).

    \b
    Examples:
        memd show
        memd show coffee-and-food
        memd show topics/coffee-and-food.md --json
    """
    from ..atomic import read_text
    from ..document import entry_json, parse_document
    from ..yamlio import FrontmatterError, jsonable

    vault = get_vault(ctx)
    path = vault.resolve_doc(doc)
    text = read_text(path, vault.rel(path))
    if not as_json:
        click.echo(text, nl=False)
        return
    document = parse_document(text)
    frontmatter, problems = None, [f"{line}: {message}" for line, message in document.problems]
    if document.frontmatter is not None:
        try:
            frontmatter = jsonable(document.frontmatter.data)
        except FrontmatterError as err:
            problems.append(f"{1 + err.line}: {err}")
    emit_json(
        {
            "id": vault.doc_id(path),
            "path": vault.rel(path),
            "title": document.title(),
            "frontmatter": frontmatter,
            "entries": [entry_json(e) for e in document.entries()],
            "problems": problems,
        }
    )


@click.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show the buffer against its thresholds, topics and history.

    \b
    Example:
        memd --vault ~/memory status --json
    """
    from datetime import timedelta

    from ..buffer import buffer_status
    from ..state import read_state
    from ..timeutil import format_duration, format_time

    vault = get_vault(ctx)
    buffer = buffer_status(vault)
    state, state_problem = read_state(vault)
    topics = len(vault.topic_files())
    engine = describe_engine(vault.config)
    from ..index.embedding import describe_retrieval

    retrieval = describe_retrieval(vault.config.embedding)
    data = {
        "vault": str(vault.root),
        "engine": engine,
        "retrieval": retrieval,
        "buffer": {
            "entries": buffer.entries,
            "unsigned": buffer.unsigned,
            "tokens": buffer.tokens,
            "token_threshold": buffer.token_threshold,
            "since": format_time(buffer.since) if buffer.since else None,
            "age_seconds": round(buffer.age_seconds) if buffer.age_seconds is not None else None,
            "age_threshold_seconds": buffer.age_threshold_seconds,
            "due": buffer.due_reason,
        },
        "topics": topics,
        "next_seq": state.next_seq,
        "consolidations": state.epoch,
        "last_consolidation": state.last_consolidation,
        "state_problem": state_problem,
    }
    if as_json:
        emit_json(data)
        return
    age = format_duration(timedelta(seconds=buffer.age_seconds)) if buffer.age_seconds is not None else "-"
    limit = format_duration(timedelta(seconds=buffer.age_threshold_seconds))
    due = f"due ({buffer.due_reason})" if buffer.due_reason else "not due"
    last = state.last_consolidation or "never"
    click.echo(f"vault       {vault.root}")
    click.echo(f"engine      {engine['summary']}")
    click.echo(f"retrieval   {retrieval['summary']}")
    tokens = f"{buffer.tokens}/{buffer.token_threshold} tokens"
    click.echo(f"buffer      {buffer.entries} entries, {tokens}, age {age}/{limit}: {due}")
    click.echo(f"topics      {topics}")
    click.echo(f"next seq    {state.next_seq}")
    click.echo(f"consolidated {state.epoch} times, last {last}")
    if state_problem:
        click.echo(f"warning: {state_problem}", err=True)


def describe_engine(config: Config) -> dict[str, object]:
    """Which engine runs, and whether memory content leaves this machine."""
    if config.engine != "llm":
        return {"name": "offline", "local": True, "summary": "offline (no model; nothing leaves this machine)"}
    from urllib.parse import urlparse

    from ..engine.client import is_local

    host = urlparse(config.llm.base_url or "https://api.openai.com/v1").hostname or "?"
    local = is_local(config.llm.base_url)
    where = "local: nothing leaves this machine" if local else f"content is sent to {host}"
    return {
        "name": "llm",
        "model": config.llm.model,
        "base_url": config.llm.base_url,
        "local": local,
        "summary": f"llm ({config.llm.model} at {host}, {where})",
    }


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@json_option
@click.pass_context
def lint(ctx: click.Context, paths: tuple[Path, ...], as_json: bool) -> None:
    """Check the vault's files; print `path:line: message` for each problem.

    PATHS may be a vault folder or files inside one (default: the whole vault).
    Exits 1 when any error is found; warnings alone exit 0.

    \b
    Examples:
        memd lint vault
        memd lint topics/coffee.md CURRENT.md
    """
    from ..lint import lint_vault
    from ..vault import find_vault

    if len(paths) == 1 and paths[0].is_dir():
        vault, files = find_vault(paths[0]), None
    elif paths:
        vault = find_vault(cwd=paths[0].resolve().parent)
        files = list(paths)
    else:
        vault, files = get_vault(ctx), None
    problems = lint_vault(vault, files)
    errors = [p for p in problems if p.severity == "error"]
    if as_json:
        emit_json(
            {
                "ok": not errors,
                "errors": len(errors),
                "warnings": len(problems) - len(errors),
                "problems": [vars(p) for p in problems],
            }
        )
    else:
        for problem in problems:
            click.echo(str(problem))
        summary = f"{len(errors)} error(s), {len(problems) - len(errors)} warning(s)"
        click.echo(summary if problems else "ok: no problems", err=True)
    if errors:
        ctx.exit(1)
