"""The index never serves stale results, and its per-query check stays cheap.

The check stats each known file and each folder the vault walk enters; the
whole vault is walked again only when a folder's mtime moved (a file created,
deleted or renamed) or a stamp was too recent to trust.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memd.ask.tools import search
from memd.index import IndexStore
from memd.index import store as store_module
from memd.index import watch as watch_module
from memd.index.freshness import scan
from memd.vault.vault import Vault

TOPIC = "# Coffee\n- <seq=12,time=2026-11-20T09:12,source=user> Takes coffee with oat milk.\n"
AN_HOUR_AGO = time.time() - 3600
_settled = [AN_HOUR_AGO]


def words_only(vault: Vault) -> None:
    config = vault.root / ".memd" / "config.toml"
    config.write_text(config.read_text().replace('embedding = "minilm-l6"', 'embedding = "none"'))


def settle(vault: Vault) -> None:
    """Age every file and folder past the racy window, as if written an hour ago
    (each time a second earlier: a stamp set back to the very value it had would
    hide a change, which no clock does)."""
    _settled.append(_settled[-1] - 1)
    then = _settled[-1]
    for folder, dirs, files in os.walk(vault.root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in [*files, *dirs]:
            os.utime(Path(folder) / name, (then, then))
    os.utime(vault.root, (then, then))


def found(vault: Vault, query: str) -> list[str]:
    """The files holding hits (an entry and its heading block may both match)."""
    return list(dict.fromkeys(hit["path"] for hit in search(vault, query, 5)))


@pytest.fixture
def settled(vault: Vault) -> Vault:
    words_only(vault)
    (vault.topics_dir / "coffee.md").write_text(TOPIC, encoding="utf-8")
    settle(vault)
    IndexStore(vault).rebuild()
    return vault


def test_an_unchanged_vault_is_checked_without_walking_it(settled: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    IndexStore(settled).sync()  # records the folder stamps of a settled vault

    def no_walk(vault: Vault) -> None:
        raise AssertionError("the vault was walked although nothing changed")

    monkeypatch.setattr(store_module, "scan", no_walk)
    assert found(settled, "oat milk") == ["topics/coffee.md"]


def test_an_edit_in_place_is_seen_on_the_next_query(settled: Vault) -> None:
    IndexStore(settled).sync()
    path = settled.topics_dir / "coffee.md"
    with path.open("a", encoding="utf-8") as handle:  # an append: the folder's mtime does not move
        handle.write("- <seq=13,time=2026-11-20T09:20,source=user> Ordered a kayak.\n")
    assert os.stat(settled.topics_dir).st_mtime < AN_HOUR_AGO
    assert found(settled, "kayak") == ["topics/coffee.md"]


def test_a_same_size_hand_edit_without_a_daemon_is_seen(settled: Vault) -> None:
    IndexStore(settled).sync()
    path = settled.topics_dir / "coffee.md"
    path.write_text(TOPIC.replace("oat milk", "soy milk"), encoding="utf-8")  # same size, new mtime
    assert found(settled, "soy") == ["topics/coffee.md"]
    assert found(settled, "oat") == []


def test_a_deleted_file_is_gone_on_the_next_query(settled: Vault) -> None:
    IndexStore(settled).sync()
    (settled.topics_dir / "coffee.md").unlink()
    assert found(settled, "oat milk") == []


def test_a_new_file_in_a_new_subfolder_is_seen(settled: Vault) -> None:
    IndexStore(settled).sync()
    folder = settled.root / "journal" / "2026"
    folder.mkdir(parents=True)
    (folder / "trip.md").write_text("Booked the ryokan in Kyoto.\n", encoding="utf-8")
    os.utime(folder, (AN_HOUR_AGO, AN_HOUR_AGO))  # only its parent's stamp gives the new folder away
    assert found(settled, "ryokan") == ["journal/2026/trip.md"]


def test_a_new_file_in_a_known_empty_folder_is_seen(settled: Vault) -> None:
    empty = settled.root / "notes"
    empty.mkdir()
    settle(settled)
    IndexStore(settled).sync()
    (empty / "plan.md").write_text("Visit the bamboo grove.\n", encoding="utf-8")
    assert found(settled, "bamboo") == ["notes/plan.md"]


def test_a_long_lived_store_sees_changes_between_queries(settled: Vault) -> None:
    store = IndexStore(settled)
    assert store.sync().records >= 1
    path = settled.topics_dir / "coffee.md"
    with path.open("a", encoding="utf-8") as handle:
        handle.write("- <seq=13,source=user> Ordered a kayak.\n")
    assert store.sync().updated == ("topics/coffee.md",)
    store.close()


def test_changed_ignore_patterns_are_not_served_from_the_cheap_check(settled: Vault) -> None:
    (settled.root / "private.md").write_text("The safe code is in the drawer.\n", encoding="utf-8")
    settle(settled)
    assert found(settled, "drawer") == ["private.md"]
    config = settled.root / ".memd" / "config.toml"
    config.write_text(config.read_text().replace("[vault]\n", '[vault]\nignore = ["private.md"]\n'))
    assert found(settled, "drawer") == []


def test_recent_folder_stamps_are_not_trusted(vault: Vault) -> None:
    words_only(vault)
    (vault.topics_dir / "coffee.md").write_text(TOPIC, encoding="utf-8")
    IndexStore(vault).sync()
    manifest = json.loads((vault.index_dir / "manifest.json").read_text())
    assert manifest["folders"]["topics"] == -1  # written just now: another change may share its mtime tick


def test_the_scan_finds_exactly_the_vaults_documents(vault: Vault) -> None:
    (vault.topics_dir / "coffee.md").write_text(TOPIC, encoding="utf-8")
    (vault.root / "notes" / "deep").mkdir(parents=True)
    (vault.root / "notes" / "deep" / "a.md").write_text("note\n", encoding="utf-8")
    (vault.root / "notes" / "b.txt").write_text("not markdown\n", encoding="utf-8")
    (vault.root / ".hidden").mkdir()
    (vault.root / ".hidden" / "c.md").write_text("hidden\n", encoding="utf-8")
    (vault.root / "inbox" / "drop.md").write_text("to ingest\n", encoding="utf-8")
    (vault.topics_dir / "link.md").symlink_to(vault.topics_dir / "coffee.md")
    walked = scan(vault)
    assert sorted(walked.files) == [vault.rel_of(path) for path in vault.documents()]
    assert {"", "topics", "notes", "notes/deep"} <= set(walked.folders)
    assert ".hidden" not in walked.folders and "inbox" not in walked.folders


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def checks_by_stats(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the checks that stat every file (the one-off search's way)."""
    calls = [0]
    stats = watch_module.unchanged

    def counted(*args: object) -> bool:
        calls[0] += 1
        return stats(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(watch_module, "unchanged", counted)
    return calls


def long_lived(vault: Vault) -> IndexStore:
    """A store checked as often as the daemon's or the MCP server's is, past the checks a one-off search makes."""
    store = IndexStore(vault)
    for _ in range(watch_module.WARM_CHECKS + 1):
        store.sync()
    return store


def append(vault: Vault) -> str:
    with (vault.topics_dir / "coffee.md").open("a", encoding="utf-8") as handle:
        handle.write("- <seq=13,time=2026-11-20T09:20,source=user> Ordered a kayak.\n")
    return "kayak"


def save_as_an_editor_does(vault: Vault) -> str:
    temporary = vault.topics_dir / ".coffee.md.swp"
    temporary.write_text(TOPIC.replace("oat milk", "soy milk"), encoding="utf-8")
    os.replace(temporary, vault.topics_dir / "coffee.md")
    return "soy"


def same_size_in_place(vault: Vault) -> str:
    path = vault.topics_dir / "coffee.md"
    with path.open("r+", encoding="utf-8") as handle:
        handle.write(TOPIC.replace("oat milk", "rye milk"))
    return "rye"


def new_folder(vault: Vault) -> str:
    folder = vault.root / "journal" / "2026"
    folder.mkdir(parents=True)
    (folder / "trip.md").write_text("Booked the ryokan in Kyoto.\n", encoding="utf-8")
    return "ryokan"


@linux_only
@pytest.mark.parametrize("change", [append, save_as_an_editor_does, same_size_in_place, new_folder])
def test_a_long_lived_store_skips_the_stats_while_nothing_changes_and_sees_every_change_at_once(
    settled: Vault, monkeypatch: pytest.MonkeyPatch, change: Callable[[Vault], str]
) -> None:
    store = long_lived(settled)
    by_stats = checks_by_stats(monkeypatch)
    for _ in range(5):
        store.sync()
    assert by_stats[0] == 0  # a quiet watch: no stat per file
    word = change(settled)  # and searched at once, with no pause for any event to arrive
    store.sync()  # what Memory.search does before each query
    hits = search(settled, word, 5, store=store)
    assert [hit["path"] for hit in hits][:1] in (["topics/coffee.md"], ["journal/2026/trip.md"])
    assert by_stats[0] == 1
    store.close()


@linux_only
def test_a_deleted_file_is_gone_from_a_long_lived_store_at_once(settled: Vault) -> None:
    store = long_lived(settled)
    (settled.topics_dir / "coffee.md").unlink()
    assert store.sync().removed == ("topics/coffee.md",)
    store.close()


def test_off_a_local_file_system_the_stats_decide_every_time(settled: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "local", lambda root: False)  # a network share: changes from afar queue nothing
    store = long_lived(settled)
    by_stats = checks_by_stats(monkeypatch)
    for _ in range(4):
        store.sync()
    assert by_stats[0] == 4
    store.close()


def inotify_queues() -> int:
    """The inotify queues this process holds open."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            continue  # closed meanwhile
    return count


@linux_only
def test_long_lived_stores_let_go_of_their_watches(settled: Vault) -> None:
    before = inotify_queues()  # stores of earlier tests not closed may let go of theirs meanwhile
    for _ in range(30):
        store = long_lived(settled)
        assert store._freshness._watch is not None
        assert inotify_queues() <= before + 1
        store.close()
    assert inotify_queues() <= before
