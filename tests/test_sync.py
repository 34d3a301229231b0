"""One memory on several machines: clones of one vault synced through a bare
repository on local disk (ARCHITECTURE.md §7)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memd.vault.seqspace import SPAN, space_of

from .conftest import REPO, Memd
from .sync_helpers import (
    SHARED,
    add,
    bare_remote,
    clone_device,
    edit,
    files,
    first_device,
    git,
    live,
    memory_files,
    sharing,
    topic_with,
    verify_ok,
)

FROM_LAPTOP = [
    "Dana started violin lessons with a teacher called Mira",
    "Dana practises violin scales for twenty minutes each evening",
    "Dana booked a kayak trip on the fjord for June",
]
FROM_DESKTOP = [
    "Dana repotted the orchid on the kitchen windowsill",
    "Dana waters the orchid once a week with rain water",
    "Dana's sourdough starter is called Bubbles",
]


@pytest.mark.slow
@pytest.mark.parametrize("first", ["laptop", "desktop"])
def test_two_devices_apart_then_synced_in_either_order(tmp_path: Path, first: str) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    shared = add(laptop, *SHARED)
    laptop("consolidate")
    laptop("sync")
    desktop = clone_device(tmp_path, remote, "desktop")

    # Apart: both add, both consolidate, each edits a different topic by hand.
    from_laptop = add(laptop, *FROM_LAPTOP)
    from_desktop = add(desktop, *FROM_DESKTOP)
    laptop("consolidate")
    desktop("consolidate")
    edit(topic_with(laptop, "oat milk"), "oat milk", "almond milk")
    edit(topic_with(desktop, "river loop"), "river loop", "canal path")

    devices = {"laptop": laptop, "desktop": desktop}
    second = "desktop" if first == "laptop" else "laptop"
    for name in (first, second, first):
        devices[name]("sync")

    everything = shared + from_laptop + from_desktop
    assert len(set(everything)) == len(everything), "a seq was assigned twice"
    assert {space_of(s) for s in from_laptop} == {1} and {space_of(s) for s in from_desktop} == {2}
    seen = {}
    for name, memd in devices.items():
        words = live(memd.vault)
        assert set(everything) <= set(words), f"{name} lost {set(everything) - set(words)}"
        verify_ok(memd)
        texts = " | ".join(words.values())
        assert "almond milk" in texts and "oat milk" not in texts
        assert "canal path" in texts and "river loop" not in texts
        for text in FROM_LAPTOP + FROM_DESKTOP:
            assert texts.count(text) == 1, f"{name}: {text!r} is not there exactly once"
        seen[name] = files(memd.vault)
    shared_files = [{k: v for k, v in seen[n].items() if not k.startswith((".memd/", "inbox/"))} for n in seen]
    assert shared_files[0] == shared_files[1]
    log = git(laptop.vault.root, "log", "--format=%an|%s")
    assert "Test User|edit: topics/" in log  # the hand edits are committed as the person's


def test_the_same_line_edited_on_two_devices_stops_sync_and_changes_nothing(tmp_path: Path) -> None:
    laptop, desktop = sharing(tmp_path)
    edit(topic_with(laptop, "oat milk"), "oat milk", "almond milk")
    edit(topic_with(desktop, "oat milk"), "oat milk", "soy milk")
    laptop("sync")
    before = files(desktop.vault)

    result = desktop("sync", ok=False)

    assert result.exit_code == 1
    assert "a person must decide" in result.output and "the working tree was not changed" in result.output
    assert "topics/" in result.output and "soy milk" in result.output and "almond milk" in result.output
    assert files(desktop.vault) == before
    assert git(desktop.vault.root, "status", "--porcelain") == ""
    report = json.loads(desktop("sync", "--json", ok=False).output)
    assert report["ok"] is False and len(report["conflicts"]) == 1 and report["pulled"] >= 1
    assert files(desktop.vault) == before


def test_a_conflict_names_the_entry_shows_where_the_versions_differ_and_take_settles_it(tmp_path: Path) -> None:
    laptop, desktop = sharing(tmp_path)
    alike = "oat milk and no sugar, warmed to sixty degrees and served in the blue cup by the window"
    edit(topic_with(laptop, "oat milk"), "oat milk and no sugar", alike + " on weekdays")
    edit(topic_with(desktop, "oat milk"), "oat milk and no sugar", alike + " on Sundays")
    laptop("sync")

    stopped = desktop("sync", ok=False).output

    [line] = [line for line in stopped.splitlines() if "edited differently" in line]
    assert re.search(r"the entry <seq=\d+> was edited differently", line)
    assert "on weekdays" in line and "on Sundays" in line  # past the 60 characters both versions share
    assert "memd sync --take here" in stopped and "memd sync --take remote" in stopped
    assert "git merge" not in stopped  # memd's own files: memd settles them

    taken = desktop("sync", "--take", "remote").output
    assert "kept the remote's version" in taken
    laptop("sync")
    assert memory_files(laptop.vault) == memory_files(desktop.vault)
    said = " ".join(live(desktop.vault).values())
    assert "on weekdays" in said and "on Sundays" not in said
    verify_ok(desktop)


@pytest.mark.slow
def test_a_conflict_a_person_resolves_by_keeping_both_lines_ends_with_every_seq_once(tmp_path: Path) -> None:
    laptop, desktop = sharing(tmp_path)
    edit(topic_with(laptop, "oat milk"), "oat milk", "almond milk")
    edit(topic_with(desktop, "oat milk"), "oat milk", "soy milk")
    laptop("sync")
    assert desktop("sync", ok=False).exit_code == 1
    # Rather than keep one version (`memd sync --take`), this person merges with git,
    # fixes the lines git marks and keeps both lines, each with the entry's signature.
    merge = "origin/main"
    root = desktop.vault.root
    assert subprocess.run(["git", "-C", str(root), "merge", "-q", merge], capture_output=True).returncode == 1
    path = topic_with(desktop, "soy milk")
    path.write_text(re.sub(r"^(?:<<<<<<<|=======|>>>>>>>).*\n", "", path.read_text()), encoding="utf-8")
    git(root, "commit", "-qam", "keep both milks")
    desktop("sync")
    settled = desktop("consolidate").output  # nothing buffered: it settles the seq held twice
    assert "dropped 0 identical copies, kept 1 changed ones as new entries" in settled
    desktop("sync")
    laptop("sync")
    for memd in (laptop, desktop):
        words = live(memd.vault)  # fails on a seq live twice
        said = " ".join(words.values())
        assert "almond milk" in said and "soy milk" in said
        verify_ok(memd)
    assert memory_files(laptop.vault) == memory_files(desktop.vault)


@pytest.mark.slow
def test_two_devices_syncing_in_loops_never_give_up_and_lose_nothing(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    desktop = clone_device(tmp_path, remote, "desktop")
    outs = {memd: tmp_path / f"{memd.vault.root.name}.json" for memd in (laptop, desktop)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.workers", "syncer", str(m.vault.root), m.vault.root.name, "15", str(out)],
            cwd=REPO,
            stderr=subprocess.PIPE,
        )
        for m, out in outs.items()
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=900)  # a hang guard, not a time limit
        assert worker.returncode == 0, err.decode()
    results = [json.loads(out.read_text()) for out in outs.values()]
    assert [r["failed"] for r in results] == [[], []]  # no "the remote kept moving"
    laptop("sync")
    desktop("sync")
    laptop("sync")
    added = {a["seq"]: a["text"] for r in results for a in r["acknowledged"]}
    for memd in (laptop, desktop):
        words = live(memd.vault)  # fails on a seq live twice
        assert all(seq in words and text in words[seq] for seq, text in added.items())
        verify_ok(memd)


@pytest.mark.slow
def test_two_devices_that_consolidated_the_same_buffer_keep_every_seq_once(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    buffered = add(laptop, *SHARED, *FROM_LAPTOP)
    laptop("sync")  # the buffer travels, unconsolidated
    desktop = clone_device(tmp_path, remote, "desktop")
    # The desktop hears one thing twice, so its consolidation folds the repeat
    # into the buffered entry (one entry, two seqs) where the laptop's does not.
    extra = add(desktop, SHARED[0], *FROM_DESKTOP)
    laptop("consolidate")
    desktop("consolidate")
    folded = f"<seq={buffered[0]}+{extra[0]},"
    assert folded in topic_with(desktop, "oat milk").read_text()

    laptop("sync")
    report = json.loads(desktop("sync", "--json").output)
    laptop("sync")

    assert report["ok"]
    assert any("consolidated on both devices" in line for line in report["resolved"])
    assert any(f"keeps seq {extra[0]}" in line for line in report["resolved"])
    for memd in (laptop, desktop):
        words = live(memd.vault)  # fails on a seq live twice
        assert set(buffered + extra) <= set(words)
        verify_ok(memd)
        assert "- <seq=" not in (memd.vault.root / "CURRENT.md").read_text(encoding="utf-8")
    assert memory_files(laptop.vault) == memory_files(desktop.vault)


@pytest.mark.slow
def test_seqs_come_from_each_devices_own_range(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    desktop = clone_device(tmp_path, remote, "desktop")
    server = clone_device(tmp_path, remote, "server")
    assert add(laptop, "one", "two") == [SPAN + 1, SPAN + 2]
    assert add(desktop, "three") == [2 * SPAN + 1]
    assert add(server, "four") == [3 * SPAN + 1]
    for memd in (laptop, desktop, server, laptop):
        memd("sync")
    assert add(laptop, "five") == [SPAN + 3]  # monotonic per device, whatever arrived from others
    registry = json.loads((laptop.vault.root / ".memd/devices.json").read_text())
    assert sorted(registry["devices"]) == ["1", "2", "3"]
    status = json.loads(server("status", "--json").output)
    assert status["sync"]["device"]["index"] == 3 and status["next_seq"] == 3 * SPAN + 2


def test_a_vault_that_never_synced_allocates_as_before(memd: Memd) -> None:
    assert add(memd, "a", "b") == [1, 2]
    memd("consolidate")
    assert add(memd, "c") == [3]
    state = json.loads((memd.vault.root / ".memd/state.json").read_text())
    assert set(state) == {"next_seq", "epoch", "last_consolidation", "buffer_since"}
    cache = json.loads((memd.vault.root / ".memd/seq.local").read_text().split("\n")[0])
    assert not {"device", "space"} & set(cache)
    assert not (memd.vault.root / ".memd/devices.json").exists()
    report = verify_ok(memd)
    assert report["devices"] == []


@pytest.mark.slow
def test_two_claims_of_one_index_the_later_moves_on(tmp_path: Path) -> None:
    from memd.sync.flow import claim

    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    git(tmp_path, "clone", "-q", str(remote), "server")
    server = _memd(tmp_path / "server")
    assert claim(server.vault).index == 2  # claimed and committed here, not pushed yet
    desktop = clone_device(tmp_path, remote, "desktop")  # takes index 2 on the remote first
    assert json.loads(desktop("status", "--json").output)["sync"]["device"]["index"] == 2

    report = json.loads(server("sync", "--json").output)

    assert report["device"]["index"] == 3 and report["registered"]
    assert any("claims index 3 instead" in line for line in report["resolved"])
    assert add(server, "from the server") == [3 * SPAN + 1]
    laptop("sync")
    assert sorted(json.loads((laptop.vault.root / ".memd/devices.json").read_text())["devices"]) == ["1", "2", "3"]


@pytest.mark.slow
def test_copies_that_assigned_one_seq_before_registering_are_stopped(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    first_device(tmp_path, remote, "laptop")
    for name in ("copy1", "copy2"):
        git(tmp_path, "clone", "-q", str(remote), name)
    copy1, copy2 = _memd(tmp_path / "copy1"), _memd(tmp_path / "copy2")
    assert add(copy1, "written on copy one") == add(copy2, "written on copy two") == [1]
    copy1("sync")
    before = files(copy2.vault)

    result = copy2("sync", ok=False)

    assert result.exit_code == 1
    assert "seq 1 was given to two different entries" in result.output
    assert "--take" not in result.output  # it settles changed lines, not this
    assert files(copy2.vault) == before
    # What the message asks for settles it: the entry here, its signature taken off,
    # is signed anew in this device's range (not put back beside itself), and the sync goes on.
    current = copy2.vault.current
    current.write_text(re.sub(r"<seq=1,[^>]*> (written on copy two)", r"\1", current.read_text()))
    assert copy2("sync").exit_code == 0
    said = [line for line in current.read_text().splitlines() if "written on copy" in line]
    # (left unsigned here until this device's next write signs it in its own range)
    assert said[0] == "- written on copy two" and re.fullmatch(r"- <seq=1,[^>]*> written on copy one", said[1])
    assert json.loads(copy2("verify", "--json").output)["ok"]


def _memd(path: Path) -> Memd:
    from memd.vault.vault import Vault

    return Memd(Vault(path.resolve()))


def test_the_json_report_counts_what_moved(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    desktop = clone_device(tmp_path, remote, "desktop")
    add(laptop, *FROM_LAPTOP)
    laptop("sync")
    add(desktop, *FROM_DESKTOP)
    before = git(desktop.vault.root, "rev-parse", "HEAD").strip()
    waiting = int(git(remote, "rev-list", "--count", f"{before}..main"))

    report = json.loads(desktop("sync", "--json").output)

    assert report["ok"] and report["conflicts"] == []
    assert waiting >= 1 and report["pulled"] == waiting and report["received"] == 3
    assert report["pushed"] == 2  # the desktop's buffered entries and the merge
    assert report["merge"] and report["head"] == report["merge"]
    again = json.loads(desktop("sync", "--json").output)
    assert again["pulled"] == again["pushed"] == again["received"] == 0


def test_status_shows_the_device_and_how_far_it_is_from_the_remote(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    add(laptop, *SHARED)
    laptop("consolidate")
    status = json.loads(laptop("status", "--json").output)["sync"]
    assert status["remote"] == "origin/main" and status["ahead"] == 1 and status["behind"] == 0
    assert status["device"] | {"id": None} == {
        "index": 1,
        "id": None,
        "name": status["device"]["name"],
        "registered": True,
        "first_seq": SPAN + 1,
        "devices": 1,
    }
    text = laptop("status").output
    assert "device" in text and f"seqs from {SPAN + 1}" in text and "1 ahead, 0 behind" in text
    laptop("sync")
    assert "0 ahead, 0 behind" in laptop("status").output


def test_an_unreachable_remote_is_a_clear_error_and_writes_go_on(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    git(laptop.vault.root, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    add(laptop, "written while offline")

    result = laptop("sync", ok=False)

    assert result.exit_code == 1 and "could not fetch from origin" in result.output
    assert add(laptop, "still writing") == [SPAN + 2]
    verify_ok(laptop)


def test_init_from_an_empty_remote_creates_and_shares_a_vault(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = clone_device(tmp_path, remote, "laptop")
    assert add(laptop, "first words") == [SPAN + 1]
    laptop("sync")
    desktop = clone_device(tmp_path, remote, "desktop")
    assert "first words" in (desktop.vault.root / "CURRENT.md").read_text()


def test_init_from_a_repository_that_is_not_a_vault_keeps_nothing(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memd.cli import main

    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "notes.txt").write_text("hello\n")
    git(other, "add", "notes.txt")
    git(other, "commit", "-qm", "notes")
    result = CliRunner().invoke(main, ["init", str(tmp_path / "clone"), "--from", str(other)])
    assert result.exit_code == 1 and "holds no memd vault" in result.output
    assert not (tmp_path / "clone").exists()


def test_a_vault_started_separately_is_not_merged_into_another(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    first_device(tmp_path, remote, "laptop")
    from memd.app.init import init_vault

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    (elsewhere / "README.md").write_text("my notes\n")
    git(elsewhere, "add", "README.md")
    git(elsewhere, "commit", "-qm", "notes")
    other = Memd(init_vault(elsewhere).vault)
    git(other.vault.root, "remote", "add", "origin", str(remote))
    before = files(other.vault)
    result = other("sync", ok=False)
    assert result.exit_code == 1 and "no history in common" in result.output and "--from" in result.output
    assert files(other.vault) == before


def test_a_claim_the_remote_holds_counts_even_if_sync_stopped_right_after_pushing(tmp_path: Path) -> None:
    from memd.sync.flow import claim

    remote = bare_remote(tmp_path)
    first_device(tmp_path, remote, "laptop")
    git(tmp_path, "clone", "-q", str(remote), "server")
    server = _memd(tmp_path / "server")
    assert add(server, "before the claim") == [1]  # not a device yet: the shared range
    assert claim(server.vault).index == 2
    assert add(server, "claimed, not pushed") == [2]
    git(server.vault.root, "push", "-q", "origin", "HEAD:main")  # what sync does; then it was killed

    assert add(server, "after the push") == [2 * SPAN + 1]
    assert git(server.vault.root, "config", "--get", "memd.deviceIndex").strip() == "2"


def test_a_damaged_device_registry_is_named_and_writes_go_on(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    (laptop.vault.root / ".memd/devices.json").write_text('{"devices": {"one": 1}')
    result = laptop("sync", ok=False)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and ".memd/devices.json is not valid JSON" in result.output
    assert add(laptop, "still writing") == [SPAN + 1]
    assert json.loads(laptop("status", "--json").output)["sync"]["device"]["problem"]


@pytest.mark.slow
def test_the_history_of_an_entry_filed_on_another_device_reads_the_same_on_both(tmp_path: Path) -> None:
    laptop, desktop = sharing(tmp_path)
    [seq] = add(desktop, "Drinks decaf coffee after 2pm")
    desktop("consolidate")
    desktop("sync")
    add(laptop, "Prefers a flat white coffee in the morning")
    laptop("consolidate")  # into the same topic, before the laptop has seen the desktop's
    laptop("sync")

    def steps(device: Memd) -> list[tuple[str, str | None]]:
        life = json.loads(device("history", str(seq), "--json").output)
        return [(step["kind"], step["commit"]) for step in life["steps"]]

    # Not "removed by memd without a record" by the laptop's own consolidation, then
    # "not committed": that commit never held the entry.
    assert steps(laptop) == steps(desktop)
    assert [action for action, _ in steps(laptop)] == ["added", "filed"]


@pytest.mark.slow
def test_a_topic_renamed_on_one_device_keeps_the_note_added_on_the_other(tmp_path: Path) -> None:
    laptop, desktop = sharing(tmp_path)
    old = topic_with(laptop, "oat milk")
    old.rename(old.with_name("my-coffee.md"))  # as a file manager or Obsidian renames it
    laptop("sync")
    mine = topic_with(desktop, "oat milk")
    mine.write_text(mine.read_text().replace("\n# ", "\nThe grinder is on the top shelf.\n\n# ", 1))

    assert "renamed to topics/my-coffee.md on the remote" in desktop("sync").output
    laptop("sync")

    for device in (laptop, desktop):
        holding = [path.name for path in device.vault.topic_files() if "oat milk" in path.read_text()]
        assert holding == ["my-coffee.md"] and not (device.vault.topics_dir / old.name).exists()
        assert "grinder is on the top shelf" in (device.vault.topics_dir / "my-coffee.md").read_text()
        verify_ok(device)


def test_two_devices_on_machines_of_the_same_name_read_apart(tmp_path: Path) -> None:
    import socket

    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")  # both machines are called as this one is
    desktop = clone_device(tmp_path, remote, "desktop")
    names = [json.loads(device("status", "--json").output)["sync"]["device"]["name"] for device in (laptop, desktop)]
    host = re.sub(r"[^a-z0-9]+", "-", socket.gethostname().lower()).strip("-")[:8]
    assert names[0] != names[1] and all(name.startswith(host) for name in names), names
    registry = json.loads((desktop.vault.meta_dir / "devices.json").read_text())
    assert sorted(device["name"] for device in registry["devices"].values()) == sorted(names)


def test_a_device_name_is_the_host_and_part_of_its_id_unless_that_is_taken() -> None:
    from memd.vault.spaces import device_name

    assert device_name("vm-3f2a9c") == "vm-3f2a"
    assert device_name("vm-3f2a9c", taken={"vm-3f2a"}) == "vm-3f2a9c"
