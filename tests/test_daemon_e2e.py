"""The real daemon in a subprocess on a temp vault: watch, ingest, consolidate, stop."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from memd.daemon.status import read_status, running_pid
from memd.vault import Vault

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


def test_the_daemon_keeps_a_vault_alive_and_stops_cleanly(vault: Vault, memd: Memd, tmp_path: Path) -> None:
    vault.config_path.write_text('[consolidate]\nbuffer_tokens = 40\nbuffer_age = "1h"\n')
    stderr = (tmp_path / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memd", "--vault", str(vault.root), "daemon", "run", "--quiet", "0.5"],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=os.environ.copy(),
    )
    try:
        wait_for(lambda: (read_status(vault) or {}).get("ready"), 20, "the daemon to start")

        # A hand edit is searchable within a second.
        text = '---\nid: coffee\nsummary: "coffee"\n---\n# Coffee\n- Takes zanzibar oat milk\n'
        (vault.topics_dir / "coffee.md").write_text(text)
        digest = hashlib.sha1(text.encode()).hexdigest()
        wait_for(lambda: indexed_hash(vault, "topics/coffee.md") == digest, 1.0, "the edit to be indexed")
        assert "topics/coffee.md" in memd("search", "zanzibar").output

        # An inbox file becomes entries; a file that cannot be ingested gets its reason.
        (vault.inbox_dir / "boiler.md").write_text("The boiler service is due in March.\n")
        (vault.inbox_dir / "scan.bin").write_bytes(b"\x00\x01\x02binary")
        wait_for(lambda: (vault.inbox_dir / "done" / "boiler.md").exists(), 10, "the inbox file to be ingested")
        assert "The boiler service is due in March." in vault.current.read_text()
        reason = vault.inbox_dir / "rejected" / "scan.bin.reason.txt"
        wait_for(reason.exists, 10, "the rejected file's reason")
        assert reason.read_text().startswith("binary file")

        # Crossing the token threshold produces a consolidation commit.
        memd("add", "Winter tyres go on the car in November; the garage on Elm Street keeps the summer set.")
        memd("add", "The garage on Elm Street charges forty euros to swap and store the tyres each season.")
        wait_for(lambda: "consolidate:" in log(vault), 15, "a consolidation commit")
        edits = lambda: [s for s in log(vault).splitlines() if s.startswith("edit:") and "topics/coffee.md" in s]  # noqa: E731
        wait_for(edits, 10, "the hand edit's own commit")
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            code = daemon.wait(timeout=20)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
            stderr.close()
    output = (tmp_path / "daemon.log").read_text()
    assert code == 0, output
    assert "stopped" in output

    # SIGTERM left a clean vault: no daemon, no half-done step, nothing uncommitted.
    assert running_pid(vault) is None
    assert (read_status(vault) or {})["state"] == "stopped"
    assert (read_status(vault) or {})["errors"] == 0, output
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
