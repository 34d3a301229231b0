"""Consolidation and memory history: consolidate, log, verify."""

from __future__ import annotations

import click

from memd.cli import emit_json, get_memory, get_vault, json_option, progress_bar

PLAN_LINES = 20


def _clip_span(span: str, width: int = 60) -> str:
    """A seq list short enough to read; the whole plan is in --json."""
    return span if len(span) <= width else span[: width - 1].rsplit(", ", 1)[0] + ", … (--json for all)"


@click.command()
@click.option("--if-due", is_flag=True, help="Only when the buffer passed its token or age threshold.")
@click.option("--dry-run", is_flag=True, help="Print the plan (where each entry goes, splits, merges); write nothing.")
@json_option
@click.pass_context
def consolidate(ctx: click.Context, if_due: bool, dry_run: bool, as_json: bool) -> None:
    """Move the CURRENT buffer into topic documents and commit the result.

    Groups and de-duplicates the buffer, routes each group to a matching topic
    (or a new one), splits topics that grew too big, merges small similar
    ones, proves every seq is accounted for, then makes one git commit.

    \b
    Examples:
        memd consolidate --dry-run
        memd consolidate --if-due      # from cron or a hook
    """
    with progress_bar("consolidating", quiet=as_json) as progress:
        outcome = get_memory(ctx).consolidate(dry_run=dry_run, if_due=if_due, progress=progress)
    for warning in outcome.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        emit_json(outcome.to_json())
        return
    if outcome.skipped:
        click.echo(f"nothing to do: {outcome.skipped}")
        return
    click.echo(("plan: " if dry_run else "") + outcome.subject)
    from memd.core.signature import SeqSet

    by_topic: dict[str, list[str]] = {}
    for move in outcome.moves:
        by_topic.setdefault(move.topic, []).append(move.seqs)
    for topic, seqs in by_topic.items():
        new = " (new)" if topic in outcome.new_topics else ""
        # Each entry's seqs apart, with commas: "5+7" is how one entry that folded two is written.
        span = _clip_span(str(SeqSet.of({s for value in seqs for s in SeqSet.parse(value)})).replace("+", ", "))
        click.echo(f"  topics/{topic}.md{new}: {len(seqs)} entr{'y' if len(seqs) == 1 else 'ies'}, seq {span}")
    for record in outcome.superseded[:PLAN_LINES]:
        click.echo(f"  seq {record.new} supersedes seq {record.old} ({record.reason})")
    if len(outcome.superseded) > PLAN_LINES:
        click.echo(f"  ... and {len(outcome.superseded) - PLAN_LINES} more supersessions (all of them: --json)")
    for topic, parts in outcome.splits:
        click.echo(f"  split {topic} -> {', '.join(parts)}")
    for survivor, absorbed in outcome.merges:
        click.echo(f"  merge {absorbed} into {survivor}")
    if outcome.commit:
        click.echo(f"committed {outcome.commit[:10]}")


@click.command()
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(min=1), help="How many commits.")
@click.option("--since", metavar="DATE", help="Only commits from this date or time on (ISO 8601).")
@json_option
@click.pass_context
def log(ctx: click.Context, limit: int, since: str | None, as_json: bool) -> None:
    """Show the memory's history: consolidations and hand edits.

    \b
    Examples:
        memd log -n 5
        memd log --since 2026-11-01 --limit 50
    """
    commits = get_memory(ctx).log(limit, since)
    if as_json:
        emit_json([c.to_json() for c in commits])
        return
    if not commits:
        click.echo("no history yet")
    for c in commits:
        click.echo(f"{c.sha[:10]} {c.time[:16]} {c.kind:<11} {c.subject}  ({c.author})")


@click.command()
@click.option("--full", is_flag=True, help="Walk the whole history again (default: resume from the last verify).")
@json_option
@click.pass_context
def verify(ctx: click.Context, full: bool, as_json: bool) -> None:
    """Account for every seq the vault ever held; exit 1 if one is lost.

    A seq must be live in exactly one entry, recorded as superseded in a
    topic's update_log, or have been removed in a commit made by a person.

    \b
    Example:
        memd verify --json
    """
    report = get_memory(ctx).verify(full=full)
    if as_json:
        emit_json(report.to_json())
    else:
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        click.echo(
            f"{'ok' if not report.problems else 'FAILED'}: {report.live} live seqs, {report.superseded} superseded, "
            f"{report.deleted_by_hand} deleted by hand, {report.commits_checked} commits checked"
        )
        for device in report.devices:
            click.echo(
                f"  device #{device['index']} {device['name'] or '?'}: {device['live']} live seqs, "
                f"highest {device['highest']}"
            )
    if report.problems:
        ctx.exit(1)


@click.command()
@click.option("--tokens", "tokens", is_flag=True, default=True, help="Report model token use (the default report).")
@json_option
@click.pass_context
def stats(ctx: click.Context, tokens: bool, as_json: bool) -> None:
    """Report what the model cost: tokens to build memory and to query it.

    Construction is extraction (at ingest) plus consolidation, shown per
    operation, per consolidation and per 1,000 ingested tokens; queries per
    `memd ask`. Failed calls count (their prompt was sent; a request the
    server refused before processing it costs 0); "estimated" marks calls
    whose server reported no usage (or timed out), counted by memd instead,
    and the totals keep server-counted and estimated tokens apart.
    Read from the local ledger (.memd/ledger.jsonl, not committed).

    \b
    Example:
        memd stats --tokens
    """
    from memd.core.ledger import summary

    vault = get_vault(ctx)
    report = summary(vault.meta_dir / "ledger.jsonl")
    if as_json:
        emit_json(report)
        return
    built, asked = report["construction"], report["query"]
    if not report["calls"]:
        click.echo("no model calls recorded (the offline engine costs no tokens)")
        return
    click.echo(
        f"model calls      {report['calls']} ({report['failed_calls']} failed, {report['estimated_calls']} estimated)"
    )
    click.echo(
        f"tokens           {report['tokens']}: {report['server_counted_tokens']} counted by the server, "
        f"{report['estimated_tokens']} estimated by memd"
    )
    per_1000 = built["per_1000_ingested"]
    click.echo(
        f"construction     {built['tokens']} tokens: extraction {built['extraction_tokens']}, consolidation "
        f"{built['consolidation_tokens']} over {built['consolidations']} consolidation(s) "
        f"({built['per_consolidation']} per consolidation)"
        + (f"; {per_1000} per 1,000 ingested tokens" if per_1000 is not None else "")
    )
    for name, row in built["by_operation"].items():
        click.echo(f"  {_row(name, row)}")
    click.echo(f"queries          {asked['tokens']} tokens over {asked['asks']} ask(s): {asked['per_ask']} per ask")
    for name, row in asked["by_operation"].items():
        click.echo(f"  {_row(name, row)}")


def _row(name: str, row: dict[str, int]) -> str:
    notes = [f"{row[k]} {k}" for k in ("failed", "estimated") if row[k]]
    extra = f" ({', '.join(notes)})" if notes else ""
    return (
        f"{name:<14} {row['calls']:>5} calls {row['prompt']:>8} prompt + {row['completion']:>7} completion tokens"
        f"{extra}"
    )
