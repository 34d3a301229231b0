"""Running the daemon in the background: ``start``/``stop`` and a systemd unit.

``start`` launches ``memd daemon run`` in a new session with its output in
``.memd/logs/daemon.log`` and waits until its status says it is ready.
``install`` writes a systemd user unit (``Restart=on-failure``) to
``~/.config/systemd/user/``; enabling it is left to ``systemctl --user``.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memd.core.errors import VaultError
from memd.daemon.status import log_path, read_status, running_pid

if TYPE_CHECKING:
    from memd.vault.vault import Vault

START_TIMEOUT = 15.0
STOP_TIMEOUT = 60.0  # a consolidation in progress is allowed to finish


def daemon_command(vault: Vault, options: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "memd", "--vault", str(vault.root), "daemon", "run", *options]


def start(vault: Vault, options: tuple[str, ...] = (), timeout: float = START_TIMEOUT) -> int:
    """Start a background daemon; returns its pid once it is watching."""
    pid = running_pid(vault)
    if pid is not None:
        raise VaultError(f"a memd daemon is already running for this vault (pid {pid})")
    log = log_path(vault)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            daemon_command(vault, options),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            cwd=vault.root,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = read_status(vault) or {}
        if status.get("pid") == process.pid and status.get("ready"):
            return process.pid
        if process.poll() is not None:
            raise VaultError(f"the daemon exited at once (code {process.returncode}); see {log}:\n{_tail(log)}")
        time.sleep(0.05)
    raise VaultError(f"the daemon did not report ready within {timeout:g}s; see {log}")


def stop(vault: Vault, timeout: float = STOP_TIMEOUT) -> int | None:
    """Ask the running daemon to stop (SIGTERM) and wait; returns its pid."""
    pid = running_pid(vault)
    if pid is None:
        return None
    if pid <= 0:
        raise VaultError("a daemon holds the vault's daemon lock but its pid is unknown")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return pid
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running_pid(vault) is None:
            return pid
        time.sleep(0.05)
    raise VaultError(f"the daemon (pid {pid}) did not stop within {timeout:g}s")


def _tail(path: Path, lines: int = 10) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# -- systemd --------------------------------------------------------------------


def unit_name(vault: Vault) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", vault.root.name.lower()).strip("-") or "vault"
    digest = hashlib.sha1(str(vault.root).encode()).hexdigest()[:8]
    return f"memd-{slug}-{digest}.service"


def unit_dir() -> Path:
    return Path.home() / ".config" / "systemd" / "user"


def unit_text(vault: Vault) -> str:
    command = " ".join(_quote(part) for part in daemon_command(vault))
    return (
        "[Unit]\n"
        f"Description=memd daemon for {vault.root}\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={command}\n"
        f"WorkingDirectory={vault.root}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "KillSignal=SIGTERM\n"
        "TimeoutStopSec=90\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def _quote(part: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", part):
        return part
    return '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'


def install(vault: Vault) -> Path:
    path = unit_dir() / unit_name(vault)
    from memd.core.atomic import atomic_write

    atomic_write(path, unit_text(vault))
    return path


def uninstall(vault: Vault) -> Path | None:
    path = unit_dir() / unit_name(vault)
    if not path.exists():
        return None
    path.unlink()
    return path
