"""kill -9 at every step of a consolidation leaves the vault fully before or
fully after, once the next memd command has run recovery."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memd.consolidation.run import recover
from memd.consolidation.verify import verify_vault
from memd.vault.vault import Vault

from .conftest import Memd, snapshot

# Twenty unrelated subjects, three notes each: twenty new topics, so the
# consolidation has many steps (journal, each file, state, commit, cleanup).
SUBJECTS = [
    "violin",
    "sourdough",
    "kayak",
    "chess",
    "orchid",
    "telescope",
    "pottery",
    "marathon",
    "beekeeping",
    "origami",
    "espresso",
    "climbing",
    "knitting",
    "aquarium",
    "calligraphy",
    "tango",
    "bonsai",
    "surfing",
    "fencing",
    "chemistry",
]


def run_consolidate(vault: Path, crash_at: int | None) -> int:
    # Words only: the notes below are cut from one template, which the embedding model reads as one
    # subject (sixty notes on twenty hobbies make one topic by meaning), and a kill needs many files.
    env = {**os.environ, "MEMD_VAULT": str(vault), "MEMD_NOW": "2026-11-21T12:00:00Z", "MEMD_EMBEDDING": "none"}
    env.pop("MEMD_CRASH_AT", None)
    if crash_at is not None:
        env["MEMD_CRASH_AT"] = str(crash_at)
    return subprocess.run([sys.executable, "-m", "memd", "consolidate"], env=env, capture_output=True).returncode


@pytest.mark.slow
def test_a_kill_at_any_step_leaves_the_vault_before_or_after(memd: Memd, tmp_path: Path) -> None:
    notes = [f"{s} lesson {k}: {s} practice notes about {s} gear and {s} teachers" for s in SUBJECTS for k in range(3)]
    memd("add", "\n".join(notes))
    start = tmp_path / "start"
    shutil.copytree(memd.vault.root, start)
    before = snapshot(Vault(start))

    reference = tmp_path / "reference"
    shutil.copytree(start, reference)
    assert run_consolidate(reference, None) == 0
    after = snapshot(Vault(reference))
    assert len([p for p in after if p.startswith("topics/") and p.endswith(".md")]) >= 18

    outcomes = {"before": 0, "after": 0}
    point = 0
    while True:
        point += 1
        trial = tmp_path / f"crash-{point}"
        shutil.copytree(start, trial)
        code = run_consolidate(trial, point)
        if code == 0:
            break  # past the last kill point: the run completed
        assert code == -9, f"kill point {point}: exit {code}"
        vault = Vault(trial)
        recover(vault)  # what the next memd command does first
        state = snapshot(vault)
        if state == before:
            outcomes["before"] += 1
        else:
            assert state == after, f"kill point {point} left a mixed vault"
            outcomes["after"] += 1
            head = subprocess.run(["git", "-C", str(trial), "log", "-1", "--format=%s"], capture_output=True, text=True)
            assert head.stdout.startswith("consolidate: 60 entries")
        assert not verify_vault(vault).problems
        shutil.rmtree(trial)
    assert point - 1 >= 20, f"only {point - 1} kill points"
    print(f"{point - 1} kill points: {outcomes}")
    assert outcomes["before"] >= 1 and outcomes["after"] >= 20


def test_a_damaged_journal_is_set_aside_with_a_warning(memd: Memd) -> None:
    journal = memd.vault.meta_dir / "journal" / "pending.json"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text('{"changes": [')
    result = memd("status")
    assert "ignored an unreadable consolidation journal" in result.output
    assert not journal.exists() and journal.with_suffix(".broken").exists()
    memd("add", "life goes on")


def test_a_consolidation_killed_before_its_commit_is_committed_as_memds_not_the_persons(
    memd: Memd, tmp_path: Path
) -> None:
    from memd.app.memory import Memory
    from memd.vault.journal import owed

    memd("add", "\n".join(f"{s} lesson: {s} practice notes about {s} gear" for s in SUBJECTS[:4]))
    start = tmp_path / "start"
    shutil.copytree(memd.vault.root, start)
    point = 0
    while True:  # the first kill point after the files are written, before the commit
        point += 1
        trial = tmp_path / f"crash-{point}"
        shutil.copytree(start, trial)
        assert run_consolidate(trial, point) == -9, "no kill point leaves a commit owed"
        if owed(Vault(trial)) is not None:
            break
        shutil.rmtree(trial)
    vault = Vault(trial)

    Memory(vault).commit_hand_edits()  # what the daemon does when it sees files change

    log = subprocess.run(["git", "-C", str(trial), "log", "--format=%an|%s"], capture_output=True, text=True).stdout
    assert log.split("\n")[0].startswith("memd|consolidate: 4 entries")  # memd's moves, in memd's commit
    assert "Test User" not in log
    assert owed(vault) is None and not verify_vault(vault).problems
