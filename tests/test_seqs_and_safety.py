"""Seq allocation, atomic writes and the one-writer lock."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from memd.core.errors import LockTimeout, WriteError
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.state import read_state
from memd.vault.vault import Vault

from .conftest import Memd


def seqs_in(vault: Vault) -> list[int]:
    return [seq for e in vault.read(vault.current).signed() for seq in e.entry.signature.seq]  # type: ignore[union-attr]


@pytest.mark.slow
def test_a_thousand_adds_give_unique_contiguous_seqs(memd: Memd) -> None:
    for i in range(1000):
        memd("add", f"note number {i}")
    assert seqs_in(memd.vault) == list(range(1, 1001))
    assert read_state(memd.vault)[0].next_seq == 1001


@pytest.mark.slow
def test_concurrent_adds_from_four_processes_lose_nothing(vault: Vault) -> None:
    worker = textwrap.dedent(
        """
        import subprocess, sys
        for i in range(10):
            lines = "".join(f"w{sys.argv[1]} call {i} line {j}\\n" for j in range(3))
            subprocess.run([sys.executable, "-m", "memd", "add"], input=lines, text=True, check=True,
                           stdout=subprocess.DEVNULL)
        """
    )
    env = {**os.environ, "MEMD_VAULT": str(vault.root), "MEMD_LOCK_TIMEOUT": "60s"}
    procs = [subprocess.Popen([sys.executable, "-c", worker, str(w)], env=env) for w in range(4)]
    assert [p.wait(timeout=240) for p in procs] == [0, 0, 0, 0]
    document = vault.read(vault.current)
    texts = sorted(e.entry.text for e in document.signed())
    assert texts == sorted(f"w{w} call {i} line {j}" for w in range(4) for i in range(10) for j in range(3))
    assert sorted(seqs_in(vault)) == list(range(1, 121))


def test_hand_deleting_the_newest_entry_does_not_free_its_seq(memd: Memd) -> None:
    memd("add", "first\nsecond")
    current = memd.vault.current
    current.write_text("".join(line for line in current.read_text().splitlines(True) if "second" not in line))
    [added] = json.loads(memd("add", "third", "--json").output)
    assert added["seq"] == 3


@pytest.mark.parametrize("damage", ["missing", "garbage", "stale"])
def test_a_missing_or_stale_state_file_never_reuses_a_seq(memd: Memd, damage: str) -> None:
    memd("add", "a\nb")
    (memd.vault.topics_dir / "t.md").write_text('---\nid: "t"\n---\n# T\n- <seq=7+40-41> consolidated earlier\n')
    state = memd.vault.state_path
    if damage == "missing":
        state.unlink()
    elif damage == "garbage":
        state.write_text("{not json")
    else:
        state.write_text(json.dumps({"next_seq": 2}))
    [added] = json.loads(memd("add", "c", "--json").output)
    assert added["seq"] == 42
    assert read_state(memd.vault)[0].next_seq == 43


def _age_folders(vault: Vault) -> None:
    """Date every folder a minute back, so their stamps are old enough to be trusted."""
    for folder in [vault.root, *(p for p in vault.root.rglob("*") if p.is_dir() and ".git" not in p.parts)]:
        stat = folder.stat()
        os.utime(folder, ns=(stat.st_atime_ns, stat.st_mtime_ns - 60 * 10**9))


def _settled(memd: Memd, seq: int) -> None:
    """An add, a topic file holding ``seq``, folders old enough to be trusted, and an add
    that walks the vault (a folder changed since the first) and notes their stamps."""
    memd("add", "a")
    (memd.vault.topics_dir / "t.md").write_text(f'---\nid: "t"\n---\n# T\n- <seq={seq}> consolidated earlier\n')
    _age_folders(memd.vault)
    memd("add", "b")


def _counted_walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gains "walk" each time the vault's folders are listed from now on."""
    walks: list[str] = []
    listings = Vault.listings

    def counted(self: Vault) -> object:
        walks.append("walk")
        return listings(self)

    monkeypatch.setattr(Vault, "listings", counted)
    return walks


def test_adds_walk_the_vault_only_when_a_folder_changed(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    _settled(memd, 2)
    walks = _counted_walks(monkeypatch)
    [added] = json.loads(memd("add", "c", "--json").output)
    assert added["seq"] == 4 and walks == []
    # An edit in place moves no folder stamp: the file's own stat catches it.
    topic = memd.vault.topics_dir / "t.md"
    topic.write_text(topic.read_text() + "- <seq=50> typed by hand\n")
    [added] = json.loads(memd("add", "d", "--json").output)
    assert added["seq"] == 51 and walks == []
    # A new file moves its folder's stamp: the vault is walked and its seqs count.
    (memd.vault.topics_dir / "pulled.md").write_text('---\nid: "pulled"\n---\n# P\n- <seq=90> from elsewhere\n')
    [added] = json.loads(memd("add", "e", "--json").output)
    assert added["seq"] == 91 and walks == ["walk"]
    # A list made under other rules (another version of memd) is not trusted either.
    _age_folders(memd.vault)
    memd("add", "f")
    cache_path = memd.vault.meta_dir / "seq.local"
    head, files = cache_path.read_text().split("\n")
    assert walks == ["walk", "walk"] and json.loads(head)["listing"] == 1
    cache_path.write_text(json.dumps({**json.loads(head), "listing": 0}) + "\n" + files)
    memd("add", "g")
    assert walks == ["walk", "walk", "walk"]


def test_an_add_with_no_file_changed_reads_only_the_buffer(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    from memd.vault import state

    _settled(memd, 2)
    cache_path = memd.vault.meta_dir / "seq.local"
    files = cache_path.read_text().split("\n")[1]
    counts: list[list[str]] = []
    count = state._count

    def counted(vault: Vault, rels: list[str], known: dict[str, Any], within: range) -> tuple[int, dict[str, Any]]:
        counts.append(rels)
        return count(vault, rels, known, within)

    monkeypatch.setattr(state, "_count", counted)
    [added] = json.loads(memd("add", "c", "--json").output)
    # No file's record is looked at again, and it is written back as it was read.
    assert added["seq"] == 4 and counts == [] and cache_path.read_text().split("\n")[1] == files
    # The buffer, changed by every add, is kept out of the record and read each time.
    with memd.vault.current.open("a") as buffer:
        buffer.write("- <seq=70> typed by hand into the buffer\n")
    [added] = json.loads(memd("add", "d", "--json").output)
    assert counts == []
    assert added["seq"] == 71


def test_a_seq_cache_an_earlier_version_wrote_is_read(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    _settled(memd, 40)
    cache_path = memd.vault.meta_dir / "seq.local"
    head, files = cache_path.read_text().split("\n")
    header = json.loads(head)
    # One line, the files inside the record and no highest seq kept apart: as memd wrote it before.
    del header["high"]
    cache_path.write_text(json.dumps({**header, "files": {**json.loads(files), "CURRENT.md": [0, 0, 1]}}))
    walks = _counted_walks(monkeypatch)
    [added] = json.loads(memd("add", "c", "--json").output)
    head, files = cache_path.read_text().split("\n")
    assert added["seq"] == 42 and walks == [] and json.loads(head)["high"] == 40 and "CURRENT.md" not in files


@pytest.mark.parametrize("name", ["../outside.md", "topics/../../outside.md"])
def test_a_damaged_seq_cache_never_sends_an_add_outside_the_vault(memd: Memd, name: str) -> None:
    memd("add", "a")
    _age_folders(memd.vault)
    memd("add", "b")  # the cache now vouches for the file list
    (memd.vault.root.parent / "outside.md").write_text("- <seq=900000> not this vault's\n")
    cache_path = memd.vault.meta_dir / "seq.local"
    head, files = cache_path.read_text().split("\n")
    damaged = {**json.loads(files), name: [0, 0, 0]}  # a stale stamp: the file would be read for its seqs
    cache_path.write_text(head + "\n" + json.dumps(damaged))
    [added] = json.loads(memd("add", "c", "--json").output)
    assert added["seq"] == 3


def test_disk_full_during_add_leaves_the_buffer_intact(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    append_entries(vault, [NewEntry("kept")])
    before = vault.current.read_bytes()
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:
        # The disk fills while the new entry is being appended to CURRENT.md.
        if os.readlink(f"/proc/self/fd/{fd}").endswith("CURRENT.md"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(WriteError, match="no space left on device; the previous content is unchanged"):
        append_entries(vault, [NewEntry("lost?")])
    assert vault.current.read_bytes() == before
    assert not [p for p in vault.root.iterdir() if p.name.endswith(".memd-tmp")]


def test_permission_error_is_reported_in_one_line(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: str, dst: str) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    before = memd.vault.current.read_bytes()
    monkeypatch.setattr(os, "replace", refuse)
    result = memd("add", "x", ok=False)
    assert result.exit_code == 1
    assert "could not write" in result.output and "permission denied" in result.output
    assert memd.vault.current.read_bytes() == before


def test_a_second_writer_waits_then_fails_clearly(vault: Vault, tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from pathlib import Path
            from memd.vault.vault import Vault
            with Vault(Path({str(vault.root)!r})).locked():
                print("locked", flush=True)
                sys.stdin.readline()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockTimeout, match=rf"held by pid {holder.pid}\); gave up after 0.3s"), vault.locked(0.3):
            pass
    finally:
        holder.communicate("go\n", timeout=60)
    with vault.locked(0.3):  # free again once the holder is gone
        pass


def test_the_lock_is_reentrant_in_one_thread(vault: Vault) -> None:
    with vault.locked(0.1), vault.locked(0.1):
        append_entries(vault, [NewEntry("nested writes are fine")])
    assert seqs_in(vault) == [1]


def _live(vault: Vault) -> dict[int, str]:
    return {
        seq: located.entry.full_text
        for path in [vault.current, *vault.topic_files()]
        for located in vault.read(path).signed()
        for seq in located.entry.signature.seq  # type: ignore[union-attr]
    }


def test_a_stale_save_of_a_topic_is_not_a_deletion(memd: Memd, vault: Vault) -> None:
    for text in ("Dana takes her coffee with oat milk", "Dana drinks two coffees before noon"):
        memd("add", "--time", "2026-11-01", text)
    memd("consolidate")
    [topic] = vault.topic_files()
    opened = topic.read_text(encoding="utf-8")  # an editor reads the topic...
    memd("add", "--time", "2026-11-02", "Dana switched her coffee to decaf after noon")
    memd("consolidate")
    assert "decaf" in topic.read_text(encoding="utf-8")  # ...memd files into it meanwhile...
    (vault.meta_dir / "acks.jsonl").unlink()  # a day later: no entry is a recent acknowledgement any more
    topic.write_text(opened + "\nMy own note about coffee.\n", encoding="utf-8")  # ...and the editor saves its copy

    result = memd("consolidate")

    assert "put back 1 entries an editor's save had removed" in result.output
    live = _live(vault)
    assert sorted(live) == [1, 2, 3] and "decaf" in live[3]
    assert "My own note about coffee." in topic.read_text(encoding="utf-8")  # the person's edit stays
    assert memd("verify").exit_code == 0
    log = subprocess.run(["git", "-C", str(vault.root), "log", "--format=%B"], capture_output=True, text=True).stdout
    assert "Memd-Removed" not in log


def test_deleting_an_entry_from_the_topic_as_memd_last_wrote_it_is_a_deletion(memd: Memd, vault: Vault) -> None:
    for text in ("Dana takes her coffee with oat milk", "Dana drinks two coffees before noon"):
        memd("add", "--time", "2026-11-01", text)
    memd("consolidate")
    memd("add", "--time", "2026-11-02", "Dana switched her coffee to decaf after noon")
    memd("consolidate")
    [topic] = vault.topic_files()
    (vault.meta_dir / "acks.jsonl").unlink()  # a day later (a recent one is put back: see restore.py)
    lines = topic.read_text(encoding="utf-8").split("\n")
    topic.write_text("\n".join(line for line in lines if "decaf" not in line or not line.startswith("- <")))

    memd("consolidate")

    assert sorted(_live(vault)) == [1, 2]  # the person meant it
    assert memd("verify").exit_code == 0
