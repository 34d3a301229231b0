"""``memd sync``: one memory on several machines, through a git remote."""

from __future__ import annotations

from typing import Any

import click

from memd.cli import emit_json, get_memory, json_option


@click.command()
@click.option("--remote", metavar="NAME", help="The git remote (default: [sync] remote, else origin).")
@click.option(
    "--branch", metavar="NAME", help="The remote's branch to follow, tracked from now on (default: the tracked one)."
)
@click.option(
    "--take",
    type=click.Choice(["here", "remote"]),
    help="Where both machines changed one entry or line: keep this machine's version or the remote's.",
)
@json_option
@click.pass_context
def sync(ctx: click.Context, remote: str | None, branch: str | None, take: str | None, as_json: bool) -> None:
    """Share the vault with your other machines through a git remote.

    Commits what is pending (your edits under your name), fetches, merges
    the remote's history (CURRENT.md, topics and memd's state entry by entry,
    so two devices' additions and consolidations never collide), then
    pushes. The first sync on a machine registers it as a device: from then
    on it gives out seqs from its own range, so no seq is ever assigned
    twice. When you edited the same line on two machines, sync stops, changes
    nothing in your files, and says what to decide; `--take here` or `--take
    remote` then keeps one version (the other stays in git history). Exits 1
    when it stopped.

    It follows the remote's branch the vault tracks (set by `memd init
    --from`; `memd status` shows it), else the one of the local branch's
    name; a vault that tracks none follows the branch holding its history.

    \b
    Examples:
        memd sync
        memd sync --branch main
        memd sync --remote backup --json
        memd sync --take remote
    """
    from memd.core.errors import MemdError

    memory = get_memory(ctx)
    try:
        report = memory.sync(remote, branch, take)
    except MemdError as err:
        stopped = getattr(err, "report", None)
        if stopped is None:
            raise
        if as_json:
            emit_json(stopped.to_json())
        else:
            click.echo(f"memd: {err}", err=True)
        ctx.exit(1)
        return
    if as_json:
        emit_json(report.to_json())
        return
    _print(report)


def _print(report: Any) -> None:
    where = f"{report.remote}/{report.branch}"
    pulled = f"pulled {report.pulled} commit(s) ({report.received} entries)" if report.pulled else "nothing to pull"
    pushed = f"pushed {report.pushed} commit(s)" if report.pushed else "nothing to push"
    click.echo(f"synced with {where}: {pulled}, {pushed}")
    device = report.device or {}
    if device.get("registered"):
        note = " (registered now)" if report.registered else ""
        click.echo(f"  device {device.get('name')} #{device['index']}: seqs from {device['first_seq']}{note}")
    for line in report.resolved:
        click.echo(f"  resolved: {line}")
    for line in report.warnings:
        click.echo(f"warning: {line}", err=True)
