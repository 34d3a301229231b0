"""The real daemon in a subprocess on a temp vault: watch, ingest, consolidate, stop."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable

import pytest

from memd.daemon.serve import usable
from memd.daemon.status import read_status, running_pid
from memd.vault.vault import Vault

from .conftest import Memd


def wait_for(condition: Callable[[], object], seconds: float, what: str) -> float:
    """Poll until ``condition`` holds; returns the seconds it took (bounded)."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if condition():
            return time.monotonic() - started
        time.sleep(0.02)
    raise AssertionError(f"timed out after {seconds:g}s waiting for {what}")


def indexed_hash(vault: Vault, rel: str) -> str | None:
    try:
        files = json.loads((vault.index_dir / "manifest.json").read_text())["files"]
    except (OSError, ValueError, KeyError):
        return None
    entry = files.get(rel)
    return entry[2] if entry else None


def log(vault: Vault) -> str:
    return subprocess.run(["git", "-C", str(vault.root), "log", "--format=%s"], capture_output=True, text=True).stdout


def hand_edit_committed(vault: Vault, rel: str) -> bool:
    return any(s.startswith("edit:") and rel in s for s in log(vault).splitlines())


@pytest.mark.slow
def test_the_daemon_keeps_a_vault_alive_and_stops_cleanly(vault: Vault, memd: Memd) -> None:
    vault.config_path.write_text('[consolidate]\nbuffer_tokens = 40\nbuffer_age = "1h"\n')
    started = memd("daemon", "start", "--quiet", "0.5").output  # `memd daemon run` in the background
    pid = running_pid(vault)
    try:
        assert pid is not None and f"daemon started (pid {pid})" in started
        status = json.loads(memd("daemon", "status", "--json").output)
        assert status["running"] and status["ready"] and status["watching"] == "inotify"
        socket = vault.meta_dir / "serve.sock"
        if usable(socket):  # the daemon answers searches on it while it runs
            assert status["serving"] == str(socket) and socket.is_socket()
        assert "already running" in memd("daemon", "start", ok=False).output  # one daemon per vault

        # A hand edit is indexed and searchable (well within a second; the wait is only a hang guard).
        text = '---\nid: coffee\nsummary: "coffee"\n---\n# Coffee\n- Takes zanzibar oat milk\n'
        (vault.topics_dir / "coffee.md").write_text(text)
        digest = hashlib.sha1(text.encode()).hexdigest()
        wait_for(lambda: indexed_hash(vault, "topics/coffee.md") == digest, 30, "the edit to be indexed")
        assert "topics/coffee.md" in memd("search", "zanzibar").output

        # An inbox file becomes entries; a file that cannot be ingested gets its reason.
        (vault.inbox_dir / "boiler.md").write_text("The boiler service is due in March.\n")
        (vault.inbox_dir / "scan.bin").write_bytes(b"\x00\x01\x02binary")
        wait_for(lambda: (vault.inbox_dir / "done" / "boiler.md").exists(), 60, "the inbox file to be ingested")
        assert "The boiler service is due in March." in vault.current.read_text()
        reason = vault.inbox_dir / "rejected" / "scan.bin.reason.txt"
        wait_for(reason.exists, 60, "the rejected file's reason")
        assert reason.read_text().startswith("binary file")

        # Crossing the token threshold produces a consolidation commit.
        memd("add", "Winter tyres go on the car in November; the garage on Elm Street keeps the summer set.")
        memd("add", "The garage on Elm Street charges forty euros to swap and store the tyres each season.")
        wait_for(lambda: "consolidate:" in log(vault), 120, "a consolidation commit")
        wait_for(lambda: hand_edit_committed(vault, "topics/coffee.md"), 60, "the hand edit's own commit")
        stopped = memd("daemon", "stop").output  # SIGTERM, then waits for the lock to go
    finally:
        if pid is not None and running_pid(vault) is not None:
            os.kill(pid, signal.SIGKILL)
    output = (vault.meta_dir / "logs" / "daemon.log").read_text()
    assert stopped.strip() == f"daemon stopped (pid {pid})", output
    assert output.rstrip().endswith("memd daemon: stopped")

    # SIGTERM left a clean vault: no daemon, no half-done step, nothing uncommitted.
    assert running_pid(vault) is None
    assert (read_status(vault) or {})["state"] == "stopped"
    assert (read_status(vault) or {})["errors"] == 0, output
    assert not (vault.meta_dir / "serve.sock").exists() and not (read_status(vault) or {}).get("serving")
    assert not (vault.meta_dir / "journal" / "pending.json").exists()
    assert not list(vault.root.rglob("*.memd-tmp"))
    status = subprocess.run(
        ["git", "-C", str(vault.root), "status", "--porcelain", "--", "CURRENT.md", "topics", "sources", ".memd"],
        capture_output=True,
        text=True,
    ).stdout
    assert status == ""
    assert memd("verify").output.startswith("ok:")
    assert memd("lint").exit_code == 0
