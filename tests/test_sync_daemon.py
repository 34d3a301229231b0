"""The daemon syncs when `[sync] remote` is set: on its interval, right after a
consolidation, and less and less often while the remote cannot be reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from memd.daemon.handler import MAX_SYNC_BACKOFF, Handler

from .conftest import Memd
from .sync_helpers import add, bare_remote, clone_device, edit, first_device, git, live, sharing, topic_with

pytestmark = pytest.mark.slow  # several clones and git remotes per test


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def daemon(memd: Memd, clock: Clock) -> Handler:
    memd("config", "set", "sync.remote", "origin")
    memd("config", "set", "sync.interval", "10m")
    handler = Handler(memd.vault, clock=clock, debounce=0.5, quiet=3.0, check_every=5.0, rescan_every=3600.0)
    handler.start()
    handler.run_due()
    return handler


def test_the_daemon_syncs_on_its_interval_and_right_after_a_consolidation(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    desktop = clone_device(tmp_path, remote, "desktop")
    clock = Clock()
    handler = daemon(laptop, clock)
    assert handler.book.data["last_sync"]["ok"] is True

    from_desktop = add(desktop, "Dana repotted the orchid")
    desktop("sync")
    clock.now += 599
    handler.run_due()
    assert not set(from_desktop) & set(live(laptop.vault))  # not yet: the interval is ten minutes
    clock.now += 2
    handler.run_due()
    assert set(from_desktop) <= set(live(laptop.vault))
    assert handler.book.data["last_sync"]["pulled"] >= 1

    laptop("config", "set", "consolidate.buffer_tokens", "3")
    add(laptop, "Dana booked a kayak trip on the fjord for June")
    clock.now += 5
    handler.run_due()  # consolidates, then syncs at once
    assert handler.book.data["last_consolidation"]["entries"] >= 1
    assert handler.book.data["last_sync"]["pushed"] >= 1
    desktop("sync")
    assert any("fjord" in p.read_text() for p in desktop.vault.topic_files())


def test_an_unreachable_remote_backs_off_and_local_writes_go_on(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    clock = Clock()
    handler = daemon(laptop, clock)
    git(laptop.vault.root, "remote", "set-url", "origin", str(tmp_path / "unplugged.git"))

    waits = []
    for _ in range(8):
        clock.now = handler.next_sync
        add(laptop, f"written offline at {clock.now:g}")
        handler.run_due()
        last = handler.book.data["last_sync"]
        assert last["ok"] is False and "could not fetch" in last["error"]
        waits.append(handler.next_sync - clock.now)
    assert waits[:3] == [1200, 2400, 3600] and max(waits) == MAX_SYNC_BACKOFF
    assert len(live(laptop.vault)) == 8

    handler.book.flush()
    shown = laptop("daemon", "status").output
    assert "last sync" in shown and "ok=False" in shown

    git(laptop.vault.root, "remote", "set-url", "origin", str(remote))
    clock.now = handler.next_sync
    handler.run_due()
    assert handler.book.data["last_sync"]["ok"] is True and handler.sync_failures == 0
    assert handler.next_sync == clock.now + 600


def test_a_conflict_the_daemon_meets_is_recorded_whole_with_its_files_and_how_to_decide(tmp_path: Path) -> None:
    laptop, desktop = sharing(tmp_path)
    edit(topic_with(laptop, "oat milk"), "oat milk", "almond milk")
    edit(topic_with(desktop, "oat milk"), "oat milk", "soy milk")
    laptop("sync")

    handler = daemon(desktop, Clock())

    error = handler.book.data["last_sync"]["error"]
    assert error.startswith("sync stopped, a person must decide") and "\n" not in error
    assert "topics/" in error and "memd sync --take here" in error  # below the message's first line
    handler.book.flush()
    assert "memd sync --take remote" in desktop("daemon", "status").output
