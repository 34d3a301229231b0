"""Reviewing the memory's history: history, diff, undo (memd/review/)."""

from __future__ import annotations

from typing import Any

import click

from memd.cli import emit_json, get_memory, json_option


def _short(text: str | None, width: int = 100) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"


@click.command()
@click.argument("target")
@json_option
@click.pass_context
def history(ctx: click.Context, target: str, as_json: bool) -> None:
    """Show the life of one memory across the vault's git history.

    TARGET is a seq (12, 12+41) or words that pick the best-matching entry.
    Lists every commit in which the entry was added, filed into a topic,
    merged with others, moved to another topic or section, edited (by memd or
    by hand), superseded by a newer entry (shown with its words) or removed,
    each with date, commit, author and the entry as it read then
    (path:line@commit).

    \b
    Examples:
        memd history 12
        memd history "peanut allergy" --json
    """
    life = get_memory(ctx).history(target)
    if as_json:
        emit_json(life.to_json())
        return
    if life.matched is not None:
        click.echo(f"best match for {life.query!r}: {life.matched.cite()}  seq {life.matched.seq}")
    click.echo(f"seq {life.seq}:")
    for step in life.steps:
        when = (step.date or "")[:16].replace("T", " ") or "?"
        sha = step.commit.short if step.commit else "-------"
        who = step.author + (" (by hand)" if step.by_hand and step.commit else "")
        click.echo(f"  {when:<16}  {sha}  {step.kind:<10} {step.detail}  [{who}]")
        entry = step.at or step.before
        if entry is not None:
            where = step.cite or (entry.cite(None) if entry.line else "")
            label = "was" if step.at is None else "   "
            click.echo(f"      {label} {where + '  ' if where else ''}seq {entry.seq}: {_short(entry.text)}")
        if step.by_seq is not None:
            by = step.by
            cite = f"{by.cite(step.commit.sha if step.commit else None)}  " if by else ""
            click.echo(f"      now {cite}seq {step.by_seq}: {_short(by.text) if by else '(not found)'}")
    if not life.now:
        click.echo("  (no longer in the vault's files)")


@click.command()
@click.argument("revs", required=False, metavar="[REV[..REV]]")
@json_option
@click.pass_context
def diff(ctx: click.Context, revs: str | None, as_json: bool) -> None:
    """Show what changed in the memory between commits, in memory terms.

    Entries filed, merged, superseded, moved, edited or removed; topics
    created, split or merged; each with seqs and words. Without REV: the
    last consolidation. REV alone: that commit. A..B: from commit A to
    commit B (dates work too: 2026-10-01..2026-11-01, each the last commit
    of that day; a start before the first commit is the empty vault).

    \b
    Examples:
        memd diff
        memd diff HEAD~3..HEAD --json
    """
    result = get_memory(ctx).diff(revs)
    if as_json:
        emit_json(result.to_json())
        return
    for commit in result.commits:
        who = f"{commit.author}" + (" (by hand)" if commit.by_hand else "")
        click.echo(f"{commit.short}  {commit.date[:16].replace('T', ' ')}  {commit.subject}  [{who}]")
    if not result.entries and not result.topics:
        click.echo("no memory changes")
        return
    for change in result.entries:
        cite = change.at.cite(result.target) if change.at else ""
        click.echo(f"  {change.kind:<10} seq {change.seq:<10} {change.detail}")
        if change.at is not None:
            click.echo(f"      {cite}: {_short(change.at.text)}")
        elif change.before:
            click.echo(f"      was: {_short(change.before[0].text)}")
        if change.by_seq is not None and change.by is not None:
            click.echo(f"      now: {change.by.cite(result.target)} seq {change.by_seq}: {_short(change.by.text)}")
    for topic in result.topics:
        click.echo(f"  topic {topic.kind:<8} {topic.topic}: {topic.detail}")


@click.command()
@click.argument("rev", required=False)
@click.option("--dry-run", is_flag=True, help="Say what would be undone; change nothing.")
@json_option
@click.pass_context
def undo(ctx: click.Context, rev: str | None, dry_run: bool, as_json: bool) -> None:
    """Revert one consolidation (default: the last) as a new commit.

    The topics it wrote go back to how they were and the entries it took
    from the buffer are back in CURRENT.md, so nothing is lost and `memd
    verify` stays clean. Refused, naming the commits in the way, when a later
    commit changed the same topics; hand edits are never undone.

    \b
    Examples:
        memd undo --dry-run
        memd undo 3f2a1c9
    """
    outcome = get_memory(ctx).undo(rev, dry_run=dry_run)
    for warning in outcome.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        emit_json(outcome.to_json())
        return
    number = outcome.undone.trailers.get("Memd-Consolidation", "?")
    head = "would undo" if dry_run else "undid"
    click.echo(f"{head} consolidation {number} ({outcome.undone.short}, {outcome.undone.subject})")
    for item in outcome.restored:
        click.echo(f"  back in CURRENT.md: seq {item.seq}: {_short(item.text)}")
    for path, action in outcome.topics:
        click.echo(f"  {action} {path}")
    if outcome.withdrawn:
        click.echo(f"  seq {outcome.withdrawn} withdrawn (hand-written items it adopted are unsigned again)")
    if outcome.commit:
        click.echo(f"committed {outcome.commit[:10]}")


def as_of_option(command: Any) -> Any:
    """``--as-of DATE|REV`` for the read commands."""
    return click.option(
        "--as-of",
        "as_of",
        metavar="DATE|REV",
        help="Over the vault as it was then: a date (through that day, UTC), a time or a commit.",
    )(command)
