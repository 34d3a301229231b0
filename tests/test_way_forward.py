"""Every state a person, an editor or an attacker can leave a vault in has a way
forward: after each one, a later `memd add`, `consolidate`, `verify` and
`sync` work, and nothing acknowledged is lost.

Each case sets the state up on a device that syncs with a bare remote, does
what memd's message says (if it says anything), then goes on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Memd
from .sync_helpers import add, bare_remote, first_device, git

pytestmark = pytest.mark.slow  # a sync to a bare remote in every case

SECRET = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"


def goes_on(memd: Memd, remote: Path) -> None:
    """A later add, consolidate, verify and sync work, and the remote has the new words."""
    said = f"Goes on after {memd.vault.root.name}: the tomatoes are ripe"
    add(memd, said)
    memd("consolidate")
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"], report["problems"]
    memd("sync")
    assert said in git(remote, "log", "-p", "--all")
    assert SECRET not in git(remote, "log", "-p", "--all")


def forget_an_entry_and_an_import(memd: Memd, tmp_path: Path) -> None:
    [seq] = add(memd, "Bart gave me rhubarb from his garden")
    export = tmp_path / "chat.md"
    export.write_text("# Chat\n\nI keep bees on the roof of the garage.\n")
    memd("ingest", str(export))
    memd("consolidate")
    memd("forget", str(seq))
    memd("forget", "--source", str(export))
    assert "rhubarb" not in memd("search", "rhubarb").output and "bees" not in memd("search", "bees").output
    memd("ingest", str(export))  # taken back, it can be imported again


def an_edited_buffer_line_gains_a_key(memd: Memd, tmp_path: Path) -> None:
    add(memd, "home wifi is called Dana-5G")
    current = memd.vault.current
    current.write_text(current.read_text().replace("Dana-5G", f"Dana-5G, my token is {SECRET}"))


def a_hand_appended_signed_line_holds_a_key(memd: Memd, tmp_path: Path) -> None:
    with memd.vault.current.open("a") as buffer:
        buffer.write(f"- <seq=77,time=2026-01-01T00:00:00Z,source=user> CI uses token_{SECRET} for pushes\n")
    memd("forget", "77")  # typed by hand, in no device's seq range: verify names it, forget takes it out


def a_key_after_an_underscore_and_in_a_file_name(memd: Memd, tmp_path: Path) -> None:
    add(memd, f"CI uses token_{SECRET} for pushes")
    named = tmp_path / f"export_{SECRET}.md"
    named.write_text("# Export\n\nThe boiler was serviced in May.\n")
    memd("ingest", str(named))


def a_seq_at_the_end_of_the_range(memd: Memd, tmp_path: Path) -> None:
    (memd.vault.root / "Untitled.md").write_text("- <seq=999999999,time=2026-01-01T00:00:00Z,source=user> x\n")
    add(memd, "an add after it")
    memd("forget", "999999999")  # verify names it as typed by hand


def a_fifo_to_ingest(memd: Memd, tmp_path: Path) -> None:
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    result = memd("ingest", str(fifo), ok=False)
    assert result.exit_code != 0 and "p.json" in result.output and len(result.output.strip().splitlines()) == 1


def a_signed_line_in_a_fence_and_one_without_its_bracket(memd: Memd, tmp_path: Path) -> None:
    [seq] = add(memd, "Swam 2 km before work")
    memd("consolidate")
    current = memd.vault.current
    fenced = f"```\n- <seq={seq + 1000},time=2026-01-01T00:00:00Z,source=user> inside a fence\n```\n"
    current.write_text(current.read_text() + fenced + "- <seq=88,time=2026-01-01T00:00:00Z,source=user no bracket\n")
    add(memd, "after them")
    memd("consolidate")


def a_git_reset_by_a_person(memd: Memd, tmp_path: Path) -> None:
    add(memd, "Pears are ripe on the north wall", "Plums need netting")
    memd("consolidate")
    git(memd.vault.root, "reset", "-q", "--hard", "HEAD~1")
    assert "put back 2 entries" in memd("consolidate").output


def a_deletion_a_person_committed(memd: Memd, tmp_path: Path) -> None:
    add(memd, "A line I will delete on purpose")
    memd("sync")  # commits the buffer: a deletion from it is now a change git sees
    current = memd.vault.current
    current.write_text("\n".join(line for line in current.read_text().splitlines() if "on purpose" not in line) + "\n")
    git(memd.vault.root, "commit", "-qam", "drop that line")
    memd("consolidate")
    assert "on purpose" not in current.read_text() + "".join(p.read_text() for p in memd.vault.topic_files())


def scratch_files_of_editors(memd: Memd, tmp_path: Path) -> None:
    add(memd, "Garden: fig tree pruned")
    memd("consolidate")
    [topic] = memd.vault.topic_files()
    (topic.parent / f"{topic.name}~").write_text(f"old copy with {SECRET}\n")
    (topic.parent / f".{topic.name}.swp").write_bytes(b"\x00swap")
    (topic.parent / f".#{topic.name}").write_text("lock")


def a_stale_save_of_lines_typed_by_hand(memd: Memd, tmp_path: Path) -> None:
    typed = memd.vault.current.read_text() + "- Car: MOT due 14 March\n- Garden: fig tree pruned\n"
    memd.vault.current.write_text(typed)
    memd("consolidate")
    memd.vault.current.write_text(typed)
    assert "dropped 2 identical copies" in memd("consolidate").output


def a_rewrite_of_the_newest_consolidation(memd: Memd, tmp_path: Path) -> None:
    add(memd, "Swam 2 km before work")
    memd("consolidate")
    [topic] = memd.vault.topic_files()
    topic.write_text(topic.read_text().replace("2 km", "3 km"))
    git(memd.vault.root, "commit", "-q", "-a", "--amend", "--no-edit")
    assert "lost words" in memd("verify", ok=False).output
    git(memd.vault.root, "reset", "-q", "--hard", "HEAD~1")  # the rewritten commit goes; memd files the words again
    memd("consolidate")


def the_same_words_said_twice(memd: Memd, tmp_path: Path) -> None:
    add(memd, "Ran 5 km along the river")
    add(memd, "Ran 5 km along the river")
    memd("consolidate")


def a_consolidation_that_cannot_write_a_topic(memd: Memd, tmp_path: Path) -> None:
    add(memd, "Garden: fig tree pruned")
    memd("consolidate")
    add(memd, "Garden: fig tree watered")
    topics = memd.vault.topics_dir
    if os.geteuid() == 0:  # root writes in a read-only folder all the same: refuse as the folder would
        from memd.vault import journal

        real = journal._put

        def refused(vault: object, rel: str, *args: object) -> bool:
            if rel.startswith("topics/"):
                from memd.core.errors import WriteError

                raise WriteError(f"could not write {rel}: permission denied")
            return real(vault, rel, *args)  # type: ignore[arg-type]

        journal._put = refused  # type: ignore[assignment]
        try:
            assert memd("consolidate", ok=False).exit_code != 0
            add(memd, "an add meanwhile")
            memd("status")
        finally:
            journal._put = real  # type: ignore[assignment]
        return
    topics.chmod(0o555)
    try:
        assert "read-only" in memd("consolidate", ok=False).output
        add(memd, "an add meanwhile")
        memd("status")
    finally:
        topics.chmod(0o755)


CASES: list[Callable[[Memd, Path], None]] = [
    forget_an_entry_and_an_import,
    an_edited_buffer_line_gains_a_key,
    a_hand_appended_signed_line_holds_a_key,
    a_key_after_an_underscore_and_in_a_file_name,
    a_seq_at_the_end_of_the_range,
    a_fifo_to_ingest,
    a_signed_line_in_a_fence_and_one_without_its_bracket,
    a_git_reset_by_a_person,
    a_deletion_a_person_committed,
    scratch_files_of_editors,
    a_stale_save_of_lines_typed_by_hand,
    a_rewrite_of_the_newest_consolidation,
    the_same_words_said_twice,
    a_consolidation_that_cannot_write_a_topic,
]


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
def test_the_vault_goes_on_after(case: Callable[[Memd, Path], None], tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    memd = first_device(tmp_path, remote)
    case(memd, tmp_path)
    goes_on(memd, remote)
