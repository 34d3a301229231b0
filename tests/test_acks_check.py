"""`memd status` checks the acknowledgement log as long as the buffer: lines it
found sound are not read again, and a bad line is named wherever it is."""

from __future__ import annotations

from memd.vault import acks
from memd.vault.vault import Vault

from .conftest import Memd


def test_a_bad_line_after_the_checked_ones_is_named(memd: Memd, vault: Vault) -> None:
    memd("add", "coffee with oat milk\ntea in the evening")
    assert acks.problem(vault) is None
    assert (vault.index_dir / "acks-checked.json").is_file()  # what was found sound is remembered
    log = vault.meta_dir / "acks.jsonl"
    with log.open("a", encoding="utf-8") as handle:
        handle.write('{"seq": 7, "entry": "not an entry", "at": "2026-01-01T00:00:00Z"}\n')
    assert acks.problem(vault) == ".memd/acks.jsonl:3: skipped: seq 7: the entry is not one entry with that seq"
    memd("add", "juice at breakfast")
    assert "acks.jsonl:3" in (acks.problem(vault) or "")


def test_a_line_changed_before_the_checked_ones_is_found_again(memd: Memd, vault: Vault) -> None:
    memd("add", "coffee with oat milk\ntea in the evening")
    assert acks.problem(vault) is None
    log = vault.meta_dir / "acks.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("[1, 2]\n" + "".join(lines[1:]), encoding="utf-8")
    assert acks.problem(vault) == ".memd/acks.jsonl:1: skipped: not a JSON object"


def test_a_torn_last_line_is_a_crash_mid_append_not_damage(memd: Memd, vault: Vault) -> None:
    memd("add", "coffee with oat milk")
    with (vault.meta_dir / "acks.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"seq": 2, "ent')
    assert acks.problem(vault) is None
