"""A warm search server for a vault no daemon watches.

A search in a process of its own pays for its start every time: the imports,
the index, the embedding model and the vectors. When no daemon serves the
vault, ``memd search`` (and ``memd ask``) answer in their own process as
before, then start this server in the background, as dmypy and ruff's server
do. It answers the next searches over the daemon's socket
(``serve.py``) and leaves after ``IDLE_SECONDS`` with no request.

It watches nothing. Each search checks the files as a search in its own
process does (a stat per file), and embeds missing vectors within the same
budget. It gives way at once to the daemon: when one starts and takes the
socket over, it leaves. One runs per vault (``.memd/daemon.warm.lock``, which
holds its pid).

``MEMD_WARM_SECONDS`` sets how long it waits for the next search; ``0``
starts none.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memd.daemon import serve

if TYPE_CHECKING:
    from memd.vault.vault import Vault

IDLE_SECONDS = 600.0
ENV = "MEMD_WARM_SECONDS"
LOCK = "daemon.warm.lock"


def idle_seconds() -> float:
    """How long a warm server waits for the next search (0: none is started)."""
    given = os.environ.get(ENV, "").strip()
    try:
        return max(0.0, float(given)) if given else IDLE_SECONDS
    except ValueError:
        return IDLE_SECONDS


def start(root: Path) -> bool:
    """Start a warm server for the vault at ``root`` in the background, unless one
    answers there already, the daemon runs, or none is wanted; whether one started."""
    idle = idle_seconds()
    path = serve.socket_path(root)
    if idle <= 0 or not serve.usable(path) or serve.asked_here() is None:
        return False
    if _held(root / ".memd" / LOCK) or _held(root / ".memd" / "daemon.lock"):
        return False  # one answers, or is about to (a socket left by a killed one is replaced)
    command = [sys.executable, "-m", "memd", "--vault", str(root), "daemon", "serve", "--idle", f"{idle:g}"]
    # The one setting a request may carry is the command's, not the server's: a server started by
    # a words-only search answers the next searches with the vault's own model.
    env = {name: value for name, value in os.environ.items() if name != serve.EMBEDDING_ENV}
    import subprocess  # here: a search that starts no server need not load it (3 ms with locale)

    try:
        subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not the terminal's: a Ctrl-C there is not for it
        )
    except OSError:
        return False
    return True


def _held(path: Path) -> bool:
    """Whether a process holds the lock at ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def run(vault: Vault, idle: float, log: Callable[[str], None] = lambda _: None, tick: float = 1.0) -> int:
    """Answer searches until ``idle`` seconds pass with none, or a daemon takes
    over; the exit status (0 also when there was nothing to do)."""
    from memd.app import Memory
    from memd.app.reading import INTERACTIVE_EMBED_SECONDS
    from memd.daemon.status import running_pid

    vault.meta_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(vault.meta_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # another warm server answers
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        if running_pid(vault) is not None:
            return 0  # the daemon answers
        server = serve.Server(vault, Memory(vault), log, embed_seconds=INTERACTIVE_EMBED_SECONDS)
        if not server.start():
            return 1
        mine = os.stat(server.path).st_ino
        # SIGTERM (`kill`, a logout) ends it as an idle time does: its socket goes with it.
        import signal  # here: a search process, which only starts a server, need not load it

        stopped = threading.Event()
        main = threading.current_thread() is threading.main_thread()  # (only there may a handler be set)
        signals = (signal.SIGTERM, signal.SIGINT) if main else ()
        previous = {sig: signal.signal(sig, lambda *_: stopped.set()) for sig in signals}
        try:
            _serve(server, mine, idle, tick, stopped, lambda: running_pid(vault) is not None)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return 0
    finally:
        os.close(fd)


def _serve(
    server: serve.Server, mine: int, idle: float, tick: float, stopped: threading.Event, daemon: Callable[[], bool]
) -> None:
    """Wait while searches come, until ``idle`` seconds pass with none, a daemon runs, the
    socket is another's, or a signal stops it; then stop listening."""
    seen, last = 0, time.monotonic()
    while True:
        if not stopped.wait(tick) and server.served != seen:
            seen, last = server.served, time.monotonic()
        try:
            ours = os.stat(server.path).st_ino == mine
        except OSError:
            ours = False
        if stopped.is_set() or not ours or time.monotonic() - last > idle or daemon():
            server.stop(unlink=ours)
            return
