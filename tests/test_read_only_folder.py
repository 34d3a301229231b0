"""A folder made read-only (or a disk that fills) while memd consolidates never
leaves the vault stuck: the consolidation changes nothing and says which file,
and add, status, search and verify go on working until it can run again."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from memd.core.errors import WriteError
from memd.vault import journal

from .conftest import Memd


def refuse(monkeypatch: pytest.MonkeyPatch, refused: Callable[[str], bool]) -> None:
    """Every write of a file ``refused`` names fails, as a read-only folder makes it fail."""
    real = journal._put

    def put(vault: object, rel: str, content: str | None, expect: object = False) -> bool:
        if refused(rel):
            raise WriteError(f"could not write {rel}: permission denied; the previous content is unchanged")
        return real(vault, rel, content, expect)  # type: ignore[arg-type]

    monkeypatch.setattr(journal, "_put", put)


def works_meanwhile(memd: Memd) -> None:
    memd("add", "Bought a new hose for the garden")
    assert "hose" in memd("search", "hose").output
    memd("status")
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_topic_that_cannot_be_written_changes_nothing_and_names_the_file(
    memd: Memd, monkeypatch: pytest.MonkeyPatch
) -> None:
    memd("add", "Tomatoes planted by the south wall")
    memd("consolidate")
    memd("add", "Tomatoes need water every evening")
    before = {p: p.read_bytes() for p in memd.vault.topic_files()}
    refuse(monkeypatch, lambda rel: rel.startswith("topics/"))
    failed = memd("consolidate", ok=False)
    assert failed.exit_code != 0
    [line] = failed.output.strip().splitlines()
    assert line.startswith("memd: could not write topics/") and "consolidation changed nothing" in line
    assert {p: p.read_bytes() for p in memd.vault.topic_files()} == before
    assert not memd.vault.interrupted(journal.PENDING_JOURNAL)
    works_meanwhile(memd)
    monkeypatch.undo()
    memd("consolidate")
    assert json.loads(memd("verify", "--json").output)["ok"]
    assert "Tomatoes need water" in "".join(p.read_text() for p in memd.vault.topic_files())


def test_a_consolidation_stopped_half_way_that_cannot_be_undone_blocks_no_reader(
    memd: Memd, monkeypatch: pytest.MonkeyPatch
) -> None:
    memd("add", "Tomatoes planted by the south wall\nRan 5 km along the river")
    memd("consolidate")
    memd("add", "Tomatoes need water every evening\nRan 7 km along the canal")
    # The topics written, then CURRENT.md refused, and the undo refused too (a disk that filled).
    refuse(monkeypatch, lambda rel: rel == "CURRENT.md")
    monkeypatch.setattr(journal, "_undo", lambda vault, done: (_ for _ in ()).throw(WriteError("disk full")))
    assert memd("consolidate", ok=False).exit_code != 0
    assert memd.vault.interrupted(journal.PENDING_JOURNAL)
    added = memd("add", "Bought a new hose for the garden")
    assert "an interrupted consolidation is not finished yet" in added.output
    assert "hose" in memd("search", "hose").output
    memd("status")
    memd("verify", ok=False)  # says what it finds, and does not fail on the journal
    monkeypatch.undo()
    memd("consolidate")  # finishes the interrupted one, then files the rest
    assert not memd.vault.interrupted(journal.PENDING_JOURNAL)
    assert json.loads(memd("verify", "--json").output)["ok"]
    said = "".join(p.read_text() for p in memd.vault.topic_files()) + memd.vault.current.read_text()
    for words in ("Tomatoes need water", "Ran 7 km", "new hose"):
        assert words in said


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder all the same")
def test_a_read_only_topics_folder_is_named_before_anything_is_written(memd: Memd, tmp_path: Path) -> None:
    memd("add", "Tomatoes planted by the south wall")
    memd("consolidate")
    memd("add", "Tomatoes need water every evening")
    memd.vault.topics_dir.chmod(0o555)
    try:
        failed = memd("consolidate", ok=False)
        assert "is read-only; make it writable" in failed.output
        works_meanwhile(memd)
    finally:
        memd.vault.topics_dir.chmod(0o755)
    memd("consolidate")
