"""kill -9 at every step of `memd sync`: the next memd command recovers, and
nothing any device wrote is lost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from memd.vault.vault import Vault

from .conftest import Memd
from .sync_helpers import add, bare_remote, clone_device, first_device, git, json_of, live, verify_ok

pytestmark = pytest.mark.slow  # several clones and git remotes per test

SHARED = ["Dana takes her coffee with oat milk", "Dana runs the river loop on Saturdays"]


@dataclass(frozen=True)
class Start:
    remote: Path
    desktop: Path
    expected: set[int]  # every seq either device acknowledged
    must_read: tuple[str, ...] = ()  # words a hand edit put there


def diverged(tmp_path: Path) -> Start:
    """A laptop that pushed its work, and a desktop with all kinds of work to sync:
    new entries, a consolidation, a hand edit not committed yet, a fresh buffer."""
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    seqs = add(laptop, *SHARED)
    laptop("consolidate")
    laptop("sync")
    desktop = clone_device(tmp_path, remote, "desktop")
    seqs += add(laptop, "Dana booked a kayak trip on the fjord", "Dana started violin lessons")
    laptop("consolidate")
    laptop("sync")
    seqs += add(desktop, "Dana repotted the orchid", "Dana's sourdough starter is called Bubbles")
    desktop("consolidate")
    topic = next(p for p in desktop.vault.topic_files() if "river loop" in p.read_text())
    topic.write_text(topic.read_text().replace("river loop", "canal path"))
    seqs += add(desktop, "Dana waters the orchid on Sundays")
    return Start(remote, desktop.vault.root, set(seqs), ("canal path",))


def run_sync(vault: Path, crash_at: int | None) -> int:
    env = {**os.environ, "MEMD_VAULT": str(vault)}
    env.pop("MEMD_CRASH_AT", None)
    if crash_at is not None:
        env["MEMD_CRASH_AT"] = str(crash_at)
    return subprocess.run([sys.executable, "-m", "memd", "sync"], env=env, capture_output=True).returncode


def trial(start: Start, folder: Path) -> tuple[Path, Path]:
    remote, desktop = folder / "remote.git", folder / "desktop"
    shutil.copytree(start.remote, remote)
    shutil.copytree(start.desktop, desktop)
    git(desktop, "remote", "set-url", "origin", str(remote))
    return remote, desktop


def check_after_crash(start: Start, remote: Path, desktop: Path, point: int) -> None:
    memd = Memd(Vault(desktop))
    later = add(memd, f"written after the crash at point {point}")  # the next memd command: it recovers first
    memd("sync")
    words = live(memd.vault)
    assert start.expected | set(later) <= set(words), f"point {point}: lost {start.expected - set(words)}"
    assert all(text in " ".join(words.values()) for text in start.must_read)
    verify_ok(memd)
    assert git(desktop, "status", "--porcelain", "--", "CURRENT.md", "topics") == ""
    other = desktop.parent / "other"
    git(desktop.parent, "clone", "-q", str(remote), str(other))
    assert start.expected | set(later) <= set(live(Vault(other)))
    verify_ok(Memd(Vault(other)))


def test_a_kill_inside_the_merge_is_finished_by_the_next_command(tmp_path: Path) -> None:
    start = diverged(tmp_path)
    for point in range(1, 60):
        remote, desktop = trial(start, tmp_path / f"crash-{point}")
        assert run_sync(desktop, point) == -9, f"no kill at point {point}"
        if (desktop / ".memd" / "journal" / "sync.json").exists():
            break  # killed while writing the merge into the working tree
    else:
        raise AssertionError("sync never stopped mid-merge")
    check_after_crash(start, remote, desktop, point)


@pytest.mark.slow
def test_a_kill_at_any_step_of_sync_loses_nothing(tmp_path: Path) -> None:
    start = diverged(tmp_path)
    point = 0
    while True:
        point += 1
        remote, desktop = trial(start, tmp_path / f"crash-{point}")
        code = run_sync(desktop, point)
        if code == 0:
            break  # past the last kill point: the run completed
        assert code == -9, f"kill point {point}: exit {code}"
        check_after_crash(start, remote, desktop, point)
        shutil.rmtree(desktop.parent)
    print(f"{point - 1} kill points in memd sync")
    assert point - 1 >= 10


@pytest.mark.slow
def test_a_kill_while_a_clone_registers_leaves_one_claim(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    seqs = add(laptop, *SHARED)
    laptop("sync")
    git(tmp_path, "clone", "-q", str(remote), "copy")  # a plain clone: not a device yet
    copy = Memd(Vault((tmp_path / "copy").resolve()))
    seqs += add(copy, "Dana repotted the orchid")
    start = Start(remote, copy.vault.root, set(seqs))
    point = 0
    while True:
        point += 1
        trial_remote, trial_copy = trial(start, tmp_path / f"crash-{point}")
        code = run_sync(trial_copy, point)
        if code == 0:
            break
        assert code == -9, f"kill point {point}: exit {code}"
        check_after_crash(start, trial_remote, trial_copy, point)
        memd = Memd(Vault(trial_copy))
        status = json_of(memd("status", "--json").output)
        device = status["sync"]["device"]
        assert device["registered"] and device["index"] == 2
        registry = json.loads((trial_copy / ".memd" / "devices.json").read_text())["devices"]
        assert [d["id"] for d in registry.values()].count(device["id"]) == 1
        shutil.rmtree(trial_copy.parent)
    print(f"{point - 1} kill points while a clone registers")
    assert point - 1 >= 5
