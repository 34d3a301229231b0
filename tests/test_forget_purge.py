"""`memd forget --purge`: no commit holds the words, here, on the remote, or on
another device once it syncs, and every device goes on adding, consolidating,
verifying and syncing."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memd.consolidation.purge import LITERAL, pieces_of, scrub, scrub_message

from .conftest import Memd
from .sync_helpers import add, bare_remote, clone_device, first_device, git, json_of
from .test_forget_sources import chat, seq_of


def history(path: Path) -> str:
    """Every version of every file, and every message, that a branch, tag or
    remote-tracking branch reaches (a remote keeps objects nothing reaches until
    its own gc, and never sends them)."""
    return _without_ids(git(path, "log", "-p", "--all", "--format=%H %B"))


def everything(path: Path) -> str:
    """Every version of every file and every message any ref or reflog reaches, and every object kept."""
    log = git(path, "log", "-p", "--all", "--reflog", "--format=%H %B")
    objects = subprocess.run(
        ["git", "-C", str(path), "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
    ).stdout.decode("utf-8", errors="replace")
    return _without_ids(log + objects)


def _without_ids(text: str) -> str:
    """``text`` without git's object ids, which may hold any run of hex digits (a PIN's "4521" too)."""
    return re.sub(r"\b[0-9a-f]{7,64}\b", "<id>", text)


def test_a_purged_entry_is_in_no_commit_here_on_the_remote_or_on_another_device(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote)
    add(laptop, "Bart gave me rhubarb from his garden", "Ran 5 km along the river this morning")
    laptop("consolidate")
    laptop("sync")
    phone = clone_device(tmp_path, remote, "phone")  # holds the old history
    [seq] = add(laptop, "My bank PIN is 4521, keep it secret")
    laptop("consolidate")
    laptop("sync")
    phone("sync")
    assert "4521" in everything(phone.vault.root)
    add(laptop, "Still in the buffer: call the plumber on Monday")

    done = json_of(laptop("forget", str(seq), "--purge", "--json").output)
    assert done["purged"]["remotes_to_push"] == ["origin"]
    assert "4521" not in everything(laptop.vault.root)
    assert "call the plumber" in laptop.vault.current.read_text()  # what no commit held is kept
    assert "4521" not in laptop("search", "PIN").output
    assert json.loads(laptop("verify", "--full", "--json").output)["ok"]

    laptop("sync")  # pushes over the remote's old history
    assert "4521" not in history(remote)
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", remote.as_uri(), str(fresh))  # over a transport, as from a server
    assert "4521" not in everything(fresh)

    add(phone, "Phone note: the shed key is under the pot")
    phone("sync")  # learns of the purge, rewrites its own history, merges
    assert "4521" not in everything(phone.vault.root)
    assert "4521" not in history(remote)
    assert "shed key" in git(remote, "log", "-p", "--all")
    assert json.loads(phone("verify", "--json").output)["ok"]

    # Every device goes on as before.
    for device in (laptop, phone, laptop):
        add(device, f"{device.vault.root.name} adds one more note about the garden")
        device("consolidate")
        device("sync")
        assert json.loads(device("verify", "--json").output)["ok"]
    assert "4521" not in history(remote)
    assert "Ran 5 km along the river" in git(remote, "log", "-p", "--all")


def test_forgotten_earlier_then_purged_later(memd: Memd) -> None:
    [seq] = add(memd, "The alarm code is 9-3-7-1, front door")
    memd("consolidate")
    memd("forget", str(seq))
    assert "9-3-7-1" in everything(memd.vault.root)
    memd("forget", str(seq), "--purge")
    assert "9-3-7-1" not in everything(memd.vault.root)
    add(memd, "A new note after the purge")
    memd("consolidate")
    assert json.loads(memd("verify", "--full", "--json").output)["ok"]


def test_a_purged_import_leaves_no_copy_and_no_words_in_history(memd: Memd, tmp_path: Path) -> None:
    export = chat(tmp_path)
    memd("ingest", str(export))
    memd("consolidate")

    def copies() -> set[str]:
        listed = git(memd.vault.root, "log", "--all", "--name-only", "--format=", "--", "sources/")
        return set(listed.split()) - {"sources/.gitkeep"}

    assert copies()
    memd("forget", "--source", str(export), "--purge")
    assert not copies()
    assert "bees on the roof" not in everything(memd.vault.root)
    memd("ingest", str(export))  # taken back, it can be imported again
    memd("consolidate")
    assert seq_of(memd.vault, "bees on the roof")


def test_scrub_takes_out_the_entry_and_its_long_lines_but_no_other_entry_and_no_short_word_elsewhere() -> None:
    topic = (
        b"# Garden\n\n"
        b"The fig tree was planted in April, the summary says.\n\n"
        b"- <seq=4,time=2026-01-01T00:00:00Z,source=user> The fig tree was planted in April\n"
        b"- <seq=5,time=2026-01-01T00:00:00Z,source=user> The fig tree was planted in April\n"
        b"- <seq=6,time=2026-01-01T00:00:00Z,source=user> Yes\n"
    )
    elsewhere = b"Yes, and then: The fig tree was planted in April.\n"
    pieces = pieces_of(["The fig tree was planted in April", "Yes"])
    assert pieces == ("The fig tree was planted in April",)
    assert scrub(topic, frozenset({4}), pieces) == (
        b"# Garden\n\n"
        b"[forgotten], the summary says.\n\n"
        b"- <seq=5,time=2026-01-01T00:00:00Z,source=user> The fig tree was planted in April\n"  # another's words
        b"- <seq=6,time=2026-01-01T00:00:00Z,source=user> Yes\n"
    )
    assert scrub(elsewhere, frozenset({4}), pieces) == b"Yes, and then: [forgotten].\n"


@given(st.binary(max_size=300), st.lists(st.text(min_size=LITERAL, max_size=30), max_size=3))
def test_scrub_returns_the_very_bytes_it_was_given_when_nothing_in_them_is_forgotten(
    data: bytes, texts: list[str]
) -> None:
    pieces = tuple(p for p in pieces_of(texts) if p.encode() not in data)
    assert scrub(data, frozenset({987654}), pieces) is data or b"<seq=" in data


def machine_copies(root: Path, words: str) -> list[str]:
    """The files outside git on this machine that still hold ``words`` (the index, the catalog, the logs)."""
    found = []
    for path in (root / ".memd").rglob("*"):
        if path.is_file() and not path.is_symlink() and words.encode() in path.read_bytes():
            found.append(str(path.relative_to(root)))
    return found


def test_a_value_superseded_in_the_buffer_is_purged_from_the_message_that_records_it(memd: Memd) -> None:
    # Superseded before it was ever filed, the old number is in no file of any commit:
    # only the consolidation's message records it, with its words.
    memd("add", "Dana's phone number is 555-0101")
    memd("add", "Dana's phone number is 555-0199")
    memd("consolidate")
    assert "555-0101" in history(memd.vault.root)
    memd("forget", "1", "--purge")
    assert "555-0101" not in everything(memd.vault.root) and not machine_copies(memd.vault.root, "555-0101")
    # Undoing that consolidation puts back the newer number, never the purged one, in a
    # clone made after the purge too (its history names the purge; it keeps no record of it).
    (memd.vault.meta_dir / "purged.json").unlink()
    undone = memd("undo").output
    assert "555-0199" in undone and "seq 1" not in undone and "forgotten" not in undone
    memd("consolidate")
    assert "555-0101" not in everything(memd.vault.root)
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_purge_leaves_no_copy_on_this_machine_and_undo_cannot_bring_it_back(memd: Memd) -> None:
    memd("add", "Dana's phone number is 555-0101")
    memd("add", "Locker code is Marmalade-4412")
    memd("consolidate")
    memd("add", "Dana's phone number is 555-0199")
    memd("consolidate")  # seq 3 supersedes seq 1, filed before
    memd("search", "Marmalade", "--as-of", "HEAD")  # a snapshot of the past, kept to be searched again
    memd("forget", "1", "--purge")
    memd("forget", "2", "--purge")
    for words in ("555-0101", "Marmalade"):
        assert words not in everything(memd.vault.root) and not machine_copies(memd.vault.root, words)
    memd("undo")
    memd("consolidate")
    assert "555-0101" not in everything(memd.vault.root)
    assert "555-0199" in "".join(path.read_text() for path in memd.vault.topic_files())
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_message_loses_every_line_it_quotes_of_a_purged_entry_and_the_reason_naming_its_value() -> None:
    message = (
        "consolidate: 3 entries -> 1 topics\n\n"
        "seq 7 supersedes seq 4: dana's phone: now '555 0199'\n"
        "    - <seq=4,time=2026-12-01T10:00Z,source=user> Dana's phone:\n"
        "      home line 555-0101, ask for Bob\n"
        "    - <seq=5,time=2026-12-01T10:00Z,source=user> PIN 4521\n"
        "seq 9 supersedes seq 3: garden: now 'roses'\n\n"
        "Memd-Seq: 1-9"
    )
    old = scrub_message(message, frozenset({4, 5}), ())
    assert "555-0101" not in old and "4521" not in old and "Dana's phone:" not in old
    assert "now '555 0199'" in old and "now 'roses'" in old and "<seq=4," in old  # the rest stays as it was
    new = scrub_message(message, frozenset({7}), ())
    assert "555 0199" not in new and "555-0101" in new
    assert scrub_message(message, frozenset({12}), ()) == message
