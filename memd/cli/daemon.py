"""``memd daemon``: run, start, stop, status, install, uninstall."""

from __future__ import annotations

from collections.abc import Callable

import click

from memd.cli import emit_json, get_vault, json_option


@click.group()
def daemon() -> None:
    """Watch the vault: index hand edits, ingest the inbox, consolidate on time.

    \b
    Examples:
        memd daemon start && memd daemon status
        memd daemon run                # in the foreground, for supervisors
        memd daemon install            # a systemd user unit
    """


def _run_options(command: Callable[..., None]) -> Callable[..., None]:
    command = click.option("--poll", is_flag=True, help="Poll the folders instead of using inotify.")(command)
    command = click.option(
        "--debounce",
        default=0.5,
        show_default=True,
        type=click.FloatRange(min=0),
        help="Seconds to wait after the last event on a path before looking at it.",
    )(command)
    return click.option(
        "--quiet",
        "quiet",
        default=3.0,
        show_default=True,
        type=click.FloatRange(min=0),
        help="Seconds without changes before a hand edit is committed and adopted.",
    )(command)


@daemon.command()
@_run_options
@click.pass_context
def run(ctx: click.Context, quiet: float, debounce: float, poll: bool) -> None:
    """Run the daemon in the foreground until SIGTERM or Ctrl-C.

    Logs go to standard error; the status is in .memd/daemon.json.

    \b
    Example:
        memd --vault ~/memory daemon run --quiet 5
    """
    from memd.daemon.runner import Runner

    ctx.exit(Runner(get_vault(ctx), quiet=quiet, debounce=debounce, poll=poll).run())


@daemon.command()
@_run_options
@click.pass_context
def start(ctx: click.Context, quiet: float, debounce: float, poll: bool) -> None:
    """Start the daemon in the background (log: .memd/logs/daemon.log).

    Takes the same options as `memd daemon run`.

    \b
    Example:
        memd daemon start --quiet 10
    """
    from memd.daemon.service import start as start_daemon

    options = ("--quiet", f"{quiet:g}", "--debounce", f"{debounce:g}", *(("--poll",) if poll else ()))
    pid = start_daemon(get_vault(ctx), options)
    click.echo(f"daemon started (pid {pid})")


@daemon.command()
@click.pass_context
def stop(ctx: click.Context) -> None:
    """Stop the background daemon; the step in progress finishes first.

    \b
    Example:
        memd daemon stop
    """
    from memd.daemon.service import stop as stop_daemon

    pid = stop_daemon(get_vault(ctx))
    click.echo("no daemon was running" if pid is None else f"daemon stopped (pid {pid})")


@daemon.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show whether the daemon runs and what it did last.

    \b
    Example:
        memd daemon status --json
    """
    from memd.daemon.status import daemon_state, log_path

    vault = get_vault(ctx)
    data = daemon_state(vault)
    pid = data.get("pid") if data["running"] else None
    if as_json:
        emit_json(data)
        return
    if pid is None and data.get("state") == "ended":
        click.echo(
            f"daemon: not running (it ended without stopping, last heard from {data.get('updated', '?')}; "
            f"its log: {vault.rel(log_path(vault))})"
        )
    elif pid is None:
        click.echo("daemon: not running" + (f" (last stopped {data['updated']})" if data.get("updated") else ""))
    else:
        click.echo(f"daemon: running (pid {pid}, {data.get('watching') or '?'}, since {data.get('started', '?')})")
    if pid is not None and data.get("serving"):
        click.echo(f"  serving             searches and questions on {data['serving']}")
    for key in ("last_event", "last_ingest", "last_consolidation", "last_commit", "last_sync", "last_error"):
        value = data.get(key)
        if value:
            details = ", ".join(f"{k}={v}" for k, v in value.items() if k != "time" and v not in (None, []))
            click.echo(f"  {key.replace('_', ' '):<19} {value.get('time', '')} {details}")
    click.echo(f"  errors              {data.get('errors', 0)}")
    for rel, problems in (data.get("invalid_files") or {}).items():
        for problem in problems:
            click.echo(f"  invalid: {rel}:{problem}")
    for note in data.get("notes") or []:
        click.echo(f"  note: {note}")


@daemon.command()
@click.option(
    "--idle",
    default=600.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds without a search before it leaves.",
)
@click.pass_context
def serve(ctx: click.Context, idle: float) -> None:
    """Answer searches and questions warm for a while, watching nothing.

    `memd search` and `memd ask` start this in the background when no
    daemon runs (MEMD_WARM_SECONDS sets the idle time; 0 starts none), so
    the next search skips loading the index and the model. It leaves after
    IDLE seconds without a request, or when `memd daemon` starts.

    
    Example:
        memd daemon serve --idle 60
    """
    from memd.daemon.warm import run as serve_warm

    ctx.exit(serve_warm(get_vault(ctx), idle))


@daemon.command()
@click.option("--print", "show", is_flag=True, help="Print the unit instead of writing it.")
@click.pass_context
def install(ctx: click.Context, show: bool) -> None:
    """Write a systemd user unit that runs the daemon (Restart=on-failure).

    \b
    Example:
        memd daemon install && systemctl --user daemon-reload \\
            && systemctl --user enable --now memd-memory-1a2b3c4d.service
    """
    from memd.daemon.service import install as write_unit
    from memd.daemon.service import unit_name, unit_text

    vault = get_vault(ctx)
    if show:
        click.echo(unit_text(vault), nl=False)
        return
    path = write_unit(vault)
    click.echo(f"wrote {path}")
    click.echo(f"enable it with: systemctl --user daemon-reload && systemctl --user enable --now {unit_name(vault)}")


@daemon.command()
@click.pass_context
def uninstall(ctx: click.Context) -> None:
    """Remove the vault's systemd user unit (stop it first with systemctl).

    \b
    Example:
        systemctl --user disable --now memd-memory-1a2b3c4d.service; memd daemon uninstall
    """
    from memd.daemon.service import uninstall as remove_unit
    from memd.daemon.service import unit_name

    path = remove_unit(get_vault(ctx))
    click.echo("no unit was installed" if path is None else f"removed {path}")
    if path is not None:
        click.echo(f"then: systemctl --user daemon-reload (and disable {unit_name(get_vault(ctx))} if it was enabled)")
