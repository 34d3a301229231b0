"""``memd daemon``: watch the vault and keep it alive.

watch.py (what is watched, the debounce queue), handler.py (event -> action,
when it is due, testable without a file-system watcher) over core.py (the
state and helpers its parts share) and one module per kind of action:
edits.py (a person's edit: index, commit, adopt), held.py (possible secrets
never committed), inbox.py (stepwise ingest), consolidating.py, remote.py
(sync with back-off); runner.py (watchdog + main loop + signals), status.py
(pid lock, status file), serve.py (searches answered over a Unix socket),
service.py (background start, stop, systemd unit).
Nothing here imports watchdog until a daemon runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.daemon.handler import Handler
    from memd.daemon.status import StatusBook, read_status, running_pid

__all__ = ["Handler", "StatusBook", "read_status", "running_pid"]


def __getattr__(name: str) -> Any:
    # Imported on first use: `memd search` asks a running daemon (serve.py)
    # without importing the daemon's own machinery.
    if name == "Handler":
        from memd.daemon.handler import Handler

        return Handler
    if name in ("StatusBook", "read_status", "running_pid"):
        from memd.daemon import status

        return getattr(status, name)
    raise AttributeError(name)
