"""A big buffer is consolidated in parts, each written and committed before
the next is judged, so an interrupted run keeps what it finished and the
next run does only the rest."""

from __future__ import annotations

import gc
import subprocess

import pytest

from memd import Memory
from memd.consolidation import run as run_module
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.vault import Vault


def fill(vault: Vault, count: int) -> None:
    subjects = ["garden", "violin", "marathon", "pottery", "camping"]
    append_entries(
        vault,
        [NewEntry(f"Note {n} on the {subjects[n % 5]}: {n * 7} minutes", "2026-11-20T10:00:00Z") for n in range(count)],
    )


def consolidations(vault: Vault) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(vault.root), "log", "--format=%s", "--grep=^Memd-Consolidation:"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def test_a_big_buffer_goes_in_parts_each_its_own_commit(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_module, "PART_ENTRIES", 50)
    fill(vault, 130)
    memory = Memory.open(vault.root)
    seen: list[tuple[int, int]] = []
    outcome = memory.consolidate(progress=lambda done, total: seen.append((done, total)))
    assert outcome.entries == 130 and outcome.left == 0
    assert len(consolidations(vault)) == 3
    assert seen[-1] == (130, 130) and all(total == 130 for _, total in seen)  # one bar over every part
    assert not memory.verify().problems


def test_between_parts_the_process_freezes_what_is_alive_and_lets_go_at_the_end(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_module, "PART_ENTRIES", 20)
    fill(vault, 50)
    frozen: list[int] = []
    attempt = run_module._with_retries

    def counting(*args: object) -> object:
        frozen.append(gc.get_freeze_count())
        return attempt(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(run_module, "_with_retries", counting)
    assert gc.get_freeze_count() == 0
    assert Memory.open(vault.root).consolidate().entries == 50
    assert frozen[0] == 0 and frozen[1] > 0 and frozen[2] > 0  # parts after the first run frozen
    assert gc.get_freeze_count() == 0  # released when the run ends


def test_a_process_that_freezes_objects_itself_keeps_its_own_policy(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_module, "PART_ENTRIES", 20)
    fill(vault, 50)
    gc.freeze()  # as the daemon's and the MCP server's heap policy does between requests
    try:
        before = gc.get_freeze_count()
        assert Memory.open(vault.root).consolidate().entries == 50
        assert gc.get_freeze_count() == before
    finally:
        gc.unfreeze()


def test_an_interrupted_big_consolidation_resumes_where_it_stopped(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_module, "PART_ENTRIES", 10)
    fill(vault, 150)
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = 40\n")  # small batches: progress inside a part
    memory = Memory.open(vault.root)

    def stop_half_way(done: int, total: int) -> None:
        if done >= 75:
            raise KeyboardInterrupt  # Ctrl-C, or the machine going down, half way

    with pytest.raises(KeyboardInterrupt):
        memory.consolidate(progress=stop_half_way)
    finished = len(consolidations(vault))
    assert finished == 7  # every part before the interruption is committed
    assert not Memory.open(vault.root).verify().problems
    again = Memory.open(vault.root).consolidate()
    assert again.entries == 80 and again.entries < 0.6 * 150  # only what was left
    assert not Memory.open(vault.root).verify().problems
