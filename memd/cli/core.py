"""Vault basics: init, add, show, status, lint."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from memd.cli import emit_json, get_memory, json_option, named_vault
from memd.cli.launch import RESERVED_KEYS
from memd.cli.output import clip


@click.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--from", "url", metavar="URL", help="Clone the vault at URL and register this machine as a device.")
@click.option(
    "--branch", metavar="NAME", help="With --from: the remote's branch to clone (default: the one holding the vault)."
)
@json_option
@click.pass_context
def init(ctx: click.Context, path: Path | None, url: str | None, branch: str | None, as_json: bool) -> None:
    """Create a vault at PATH (default: --vault or $MEMD_VAULT, else here); existing files are kept.

    On an existing vault, adds to its .gitignore the patterns of memd's
    local files that it lacks (a vault made by an older memd), and
    changes nothing else. Runs `git init` too unless PATH is already inside a git repository.
    With --from, clones an existing vault from a git remote instead and
    registers this machine as one of its devices (see `memd sync`). It
    takes the remote's HEAD branch when that holds a vault, else the only
    branch that does; when several hold unrelated vaults it stops and lists
    them (pick one with --branch). Only an empty remote gets a new vault.

    \b
    Examples:
        memd init ~/memory
        memd init ~/memory --from git@example.com:me/memory.git
        memd init ~/memory --from git@example.com:me/memory.git --branch main
    """
    from memd.app import Memory

    if path is None:
        # `memd --vault ~/memory init` means ~/memory, not the folder it was typed in.
        path = Path(named_vault(ctx) or ".")
    if url is not None:
        _init_from(url, path, branch, as_json)
        return
    if branch is not None:
        raise click.UsageError("--branch goes with --from URL")
    result = Memory.init(path)
    if as_json:
        emit_json(
            {
                "vault": str(result.vault.root),
                "created": list(result.created),
                "git_init": result.git_initialised,
                "ignores_added": list(result.ignores_added),
            }
        )
        return
    if result.ignores_added:
        click.echo(f"{result.vault.root}/.gitignore: added {', '.join(result.ignores_added)}")
    if not result.created:
        if result.ignores_added:
            return
        click.echo(f"{result.vault.root} is already a memd vault; nothing changed")
        return
    click.echo(f"created vault at {result.vault.root}")
    for name in result.created:
        click.echo(f"  + {name}")
    if result.git_initialised:
        click.echo("  + git repository")


def _init_from(url: str, path: Path, branch: str | None, as_json: bool) -> None:
    from memd.app import Memory

    cloned = Memory.init_from(url, path, branch)
    if as_json:
        emit_json(cloned.to_json())
        return
    device = cloned.report.device or {}
    if cloned.created:
        click.echo(f"created a new vault at {cloned.vault.root} ({url} had no branch; shared as its {cloned.branch})")
    else:
        click.echo(f"cloned the vault on branch {cloned.branch} of {url} into {cloned.vault.root}")
    if device.get("registered"):
        click.echo(f"  this machine is device {device.get('name')} #{device['index']}: seqs from {device['first_seq']}")


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
    from memd.cli.launch import pieces, read_stdin
    from memd.cli.output import added_lines

    if text is None or text == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("give TEXT, or pipe text on standard input")
        text = read_stdin()
    extra = tuple(_parse_meta(item) for item in meta)
    added = get_memory(ctx).add(pieces(text, one), time=when, source=source, src=src, meta=extra)
    for line, to_err in added_lines(added, as_json):
        click.echo(line, err=to_err)


def _parse_meta(item: str) -> tuple[str, str]:
    key, eq, value = item.partition("=")
    if not eq or not key:
        raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--meta")
    if key == "seq":
        raise click.BadParameter("seq is assigned by memd and cannot be set", param_hint="--meta")
    if key in RESERVED_KEYS:
        raise click.BadParameter(f"use --{key} to set {key}", param_hint="--meta")
    from memd.core.errors import FormatError
    from memd.core.signature import check_meta

    try:
        check_meta(key, value)
    except FormatError as err:
        raise click.BadParameter(str(err), param_hint="--meta") from None
    return key, value


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
    shown = get_memory(ctx).show(doc)
    if as_json:
        emit_json(shown.to_json())
    else:
        click.echo(shown.text, nl=False)


@click.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show the buffer against its thresholds, topics and history.

    \b
    Example:
        memd --vault ~/memory status --json
    """
    from memd.app.status import age_text

    facts = get_memory(ctx).status()
    retrieval = facts.extra["retrieval"]
    if as_json:
        emit_json(facts.to_json())
        return
    buffer = facts.buffer
    due = f"due ({buffer.due})" if buffer.due else "not due"
    click.echo(f"vault       {facts.vault}")
    click.echo(f"engine      {facts.engine['summary']}")
    click.echo(f"retrieval   {retrieval['summary']}")
    index = facts.extra.get("index") or {}
    if index:
        click.echo(f"index       {index['summary']}")
    tokens = f"{buffer.tokens}/{buffer.token_threshold} tokens"
    age = f"age {age_text(buffer.age_seconds)}/{age_text(buffer.age_threshold_seconds)}"
    click.echo(f"buffer      {buffer.entries} entries, {tokens}, {age}: {due}")
    health = facts.extra.get("topic_health")
    if health and health["count"]:
        click.echo(
            f"topics      {facts.topics}: median {health['median_tokens']} tokens, largest {health['max_tokens']}, "
            f"{health['tiny']} tiny, {health['huge']} over the split size"
        )
    else:
        click.echo(f"topics      {facts.topics}")
    click.echo(f"next seq    {facts.next_seq}")
    _sync_lines(facts.extra.get("sync") or {})
    click.echo(f"consolidated {facts.consolidations} times, last {facts.last_consolidation or 'never'}")
    endpoint = facts.extra.get("endpoint")
    if endpoint:
        click.echo(f"model       {endpoint.get('endpoint')}: {endpoint['state']}")
    if facts.state_problem:
        click.echo(f"warning: {facts.state_problem}", err=True)
    if index.get("problem"):
        click.echo(f"warning: {index['problem']}", err=True)
    if index.get("suggestion"):
        click.echo(f"hint: {index['suggestion']}", err=True)
    if facts.extra.get("gitignore_missing"):
        patterns = ", ".join(facts.extra["gitignore_missing"])
        click.echo(f"hint: .gitignore does not ignore {patterns}: run `memd init` to add them", err=True)
    if facts.extra.get("acks_problem"):
        click.echo(f"warning: {facts.extra['acks_problem']}", err=True)
    if facts.extra.get("vanished"):
        click.echo(
            f"warning: {facts.extra['vanished']} entries memd acknowledged are in no file (a `git reset`, or an "
            "editor's stale save?): memd puts them back on its next commit or consolidation, the daemon once the "
            "files settle (`memd forget SEQ` removes one on purpose)",
            err=True,
        )
    if facts.extra.get("buffer_problem"):
        click.echo(f"warning: {facts.extra['buffer_problem']}", err=True)
    for problem in (health or {}).get("skipped") or []:
        click.echo(f"warning: {problem}; consolidation leaves that topic alone until it is fixed", err=True)
    if facts.extra.get("uncommitted"):
        click.echo(f"warning: not committed yet: {facts.extra['uncommitted']} (memd retries on its next run)", err=True)


def _sync_lines(sync: dict[str, Any]) -> None:
    device = sync.get("device") or {}
    if device.get("registered"):
        click.echo(f"device      {device.get('name')} #{device['index']} (seqs from {device['first_seq']})")
    elif device.get("devices"):
        click.echo("device      not registered yet: run `memd sync` (seqs come from the shared range until then)")
    if sync.get("remote"):
        remote = sync["remote"] + ("" if sync.get("tracked") else " (not tracked yet; the next `memd sync` picks one)")
        if sync.get("ahead") is None:
            click.echo(f"remote      {remote}: never fetched (run `memd sync`)")
        else:
            where = f"{sync['ahead']} ahead, {sync['behind']} behind"
            click.echo(f"remote      {remote}: {where} (as of the last sync)")


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
    from memd.app import Memory

    if len(paths) == 1 and paths[0].is_dir():
        memory, files = Memory.open(paths[0], recover=False), None
    elif paths:
        from memd.core.errors import VaultNotFound

        try:
            memory, files = Memory.open(cwd=paths[0].resolve().parent, recover=False), list(paths)
        except VaultNotFound:
            raise VaultNotFound(f"{paths[0]} is not inside a memd vault (lint checks a vault's files)") from None
    else:
        memory, files = get_memory(ctx), None
    problems = memory.lint(files)
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


@click.command()
@click.argument("seqs", required=False)
@click.option("--source", "source", metavar="PATH", help="Take back a whole import: its source copy and its entries.")
@click.option(
    "--purge",
    is_flag=True,
    help="Rewrite the git history too, so no commit holds the words; `memd sync` pushes over the remote's old history.",
)
@json_option
@click.pass_context
def forget(ctx: click.Context, seqs: str | None, source: str | None, purge: bool, as_json: bool) -> None:
    """Remove the entries holding SEQS on purpose, and commit that under your name.

    Deleting a line by hand works too, but memd puts back an entry it
    acknowledged in the last 24 hours when it vanishes without a commit (an
    editor saving an old copy looks the same); `forget` says you meant it.
    A heading left with nothing under it goes too, and a topic left empty
    is deleted.

    Git history keeps every earlier version. `--purge` rewrites it (with
    git-filter-repo) so that no commit holds the words, then prunes the old
    objects. Other clones rewrite theirs at their next `memd sync`, and the
    remote's branch is pushed over at this clone's next `memd sync`.

    \b
    Examples:
        memd forget 12
        memd forget 41-43 --json
        memd forget --source ~/Downloads/conversations.json
        memd forget 12 --purge
    """
    if (seqs is None) == (source is None):
        raise click.UsageError("give SEQS or --source PATH")
    memory = get_memory(ctx)
    result = memory.forget_source(source, purge=purge) if source is not None else memory.forget(seqs or "", purge=purge)
    if as_json:
        emit_json(result.to_json())
        return
    for path, line, text in result.entries:
        click.echo(f"forgot {path}:{line}: {clip(text)}")
    if result.warning:
        click.echo(f"warning: {result.warning}", err=True)
    elif result.commit:
        click.echo(f"committed {result.commit[:10]}")
    if result.purged is not None:
        done = result.purged
        click.echo(f"purged seq {done.seqs} from the history: {done.rewritten} commits rewritten, old objects pruned")
        for remote in done.remotes:
            click.echo(f"{remote} still holds the old history: `memd sync` pushes over it (a force-push)")
