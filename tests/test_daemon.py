"""The daemon's logic, driven by synthetic events and a fake clock (no sleeping)."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memd.app import Memory
from memd.core.errors import VaultError
from memd.daemon.handler import Handler, file_hash
from memd.daemon.runner import start_observer
from memd.daemon.status import DaemonLock, running_pid
from memd.daemon.watch import Debouncer, classify
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.vault import Vault

from .conftest import Memd

pytestmark = pytest.mark.slow  # the daemon's steps with git commits and index syncs

QUIET = 3.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def handler(vault: Vault, clock: Clock) -> Handler:
    made = Handler(vault, clock=clock, debounce=0.5, quiet=QUIET, check_every=5.0, rescan_every=3600.0)
    made.start()
    made.run_due()
    return made


def edit(handler: Handler, rel: str, text: str) -> Path:
    """A person saves a file; the watcher reports the path (of whatever event type)."""
    path = handler.vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    handler.notice(str(path))
    return path


def step(handler: Handler, clock: Clock, seconds: float) -> int:
    clock.advance(seconds)
    return handler.run_due()


def subjects(vault: Vault) -> list[str]:
    out = subprocess.run(["git", "-C", str(vault.root), "log", "--format=%s|%an"], capture_output=True, text=True)
    return out.stdout.splitlines()


def indexed(vault: Vault) -> dict[str, Any]:
    return json.loads((vault.index_dir / "manifest.json").read_text())["files"]


COFFEE = '---\nid: coffee\nsummary: "coffee"\n---\n# Coffee\n- Takes zanzibar oat milk\n'


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("CURRENT.md", "current"),
        ("topics/coffee.md", "topic"),
        ("topics/food/coffee.md", "topic"),
        ("sources/2026/11/chat.md", "source"),
        ("inbox/chat.json", "inbox"),
        ("inbox/done/chat.json", None),
        ("inbox/rejected/chat.json.reason.txt", None),
        (".git/index", None),
        (".obsidian/workspace.json", None),
        (".trash/coffee.md", None),
        (".memd/index/manifest.json", None),
        (".memd/daemon.json", None),
        ("topics/.coffee.md.swp", None),
        ("topics/coffee.md~", None),
        ("topics/coffee.tmp", None),
        ("topics/.goutputstream-X1Y2Z3", None),
        ("topics/.coffee.md.1234.memd-tmp", None),
        ("inbox/.partial", None),
        ("topics/notes.txt", None),
        ("README.md", "note"),  # every Markdown file is memory: Obsidian's root notes
        ("Untitled.md", "note"),
        ("people/sam.md", "note"),
        (".obsidian/snippets/x.md", None),
        (".memd/notes.md", None),
        ("inbox/done/chat.md", None),
        ("people/../CURRENT.md", None),
    ],
)
def test_only_memory_files_are_watched(rel: str, kind: str | None) -> None:
    assert classify(rel) == kind


def test_the_debouncer_waits_for_a_quiet_moment() -> None:
    queue = Debouncer(0.5)
    queue.touch("topics/a.md", 0.0)
    queue.touch("topics/a.md", 0.3)  # a second event restarts the wait
    assert queue.due(0.6) == []
    assert queue.due(0.8) == ["topics/a.md"]
    assert queue.due(5.0) == []


def test_a_hand_edit_is_indexed_at_once_then_committed_and_adopted(
    handler: Handler, clock: Clock, vault: Vault
) -> None:
    edit(handler, "topics/coffee.md", COFFEE)
    step(handler, clock, 0.4)
    assert "topics/coffee.md" not in indexed(vault)  # still debouncing
    step(handler, clock, 0.1)
    assert "topics/coffee.md" in indexed(vault)
    assert not subjects(vault)[0].startswith("edit:")  # not quiet long enough yet

    step(handler, clock, QUIET)
    log = subjects(vault)
    assert log[:2] == ["adopt: 1 hand-written entry in topics/coffee.md|memd", "edit: topics/coffee.md|Test User"]
    committed = subprocess.run(
        ["git", "-C", str(vault.root), "show", "HEAD~1:topics/coffee.md"], capture_output=True, text=True
    ).stdout
    assert committed == COFFEE  # the person's commit holds exactly what they typed
    [entry] = vault.read(vault.root / "topics/coffee.md").entries()
    assert entry.entry.signature is not None and entry.entry.signature.source == "hand"
    assert entry.entry.text == "Takes zanzibar oat milk"

    assert step(handler, clock, 0.5) == 0  # the adoption's own write is not a new hand edit
    assert len(handler.settling) == 0


def test_editing_again_during_the_quiet_period_postpones_the_commit(
    handler: Handler, clock: Clock, vault: Vault
) -> None:
    edit(handler, "topics/coffee.md", COFFEE)
    step(handler, clock, 2.0)
    edit(handler, "topics/coffee.md", COFFEE + "- Likes cardamom buns\n")
    step(handler, clock, 2.0)
    assert not any(s.startswith("edit:") for s in subjects(vault))
    step(handler, clock, QUIET)
    assert any(s.startswith("edit:") for s in subjects(vault))
    assert "cardamom" in (vault.root / "topics/coffee.md").read_text()


def test_an_invalid_file_is_reported_and_never_rewritten(handler: Handler, clock: Clock, vault: Vault) -> None:
    broken = "---\nid: [unclosed\n---\n# Coffee\n- Takes oat milk\n"
    path = edit(handler, "topics/coffee.md", broken)
    step(handler, clock, 0.5)
    step(handler, clock, QUIET)
    problems = handler.book.data["invalid_files"]["topics/coffee.md"]
    assert any("invalid YAML frontmatter" in p for p in problems)
    assert path.read_text() == broken  # no adoption into a file that does not parse
    assert subjects(vault)[0] == "edit: topics/coffee.md|Test User"  # still recorded as the person's edit

    edit(handler, "topics/coffee.md", COFFEE)  # fixed by hand: the report clears
    step(handler, clock, 0.5)
    assert "topics/coffee.md" not in handler.book.data["invalid_files"]


def test_a_deleted_topic_leaves_the_index_and_is_committed_as_a_hand_deletion(
    handler: Handler, clock: Clock, vault: Vault, memd: Memd
) -> None:
    path = edit(handler, "topics/coffee.md", COFFEE)
    step(handler, clock, 0.5)
    step(handler, clock, QUIET)
    path.unlink()
    handler.notice(str(path))
    step(handler, clock, 0.5)
    assert "topics/coffee.md" not in indexed(vault)
    step(handler, clock, QUIET)
    assert subjects(vault)[0] == "edit: topics/coffee.md|Test User"
    assert "1 deleted by hand" in memd("verify").output


def test_an_inbox_file_is_ingested_once_it_stops_changing(handler: Handler, clock: Clock, vault: Vault) -> None:
    (vault.inbox_dir / "note.md").write_text("The boiler service is due in March.\n")
    handler.notice(str(vault.inbox_dir / "note.md"))
    step(handler, clock, 0.5)
    assert (vault.inbox_dir / "note.md").exists()  # first look: size and mtime noted
    step(handler, clock, 0.5)
    assert (vault.inbox_dir / "done" / "note.md").exists()
    assert "The boiler service is due in March." in vault.current.read_text()
    assert handler.book.data["last_ingest"]["status"] == "ingested"
    assert "CURRENT.md" in indexed(vault)

    handler.notice(str(vault.current))  # the event caused by memd's own append
    step(handler, clock, 0.5)
    assert len(handler.settling) == 0


def test_a_rejected_inbox_file_gets_its_reason(handler: Handler, clock: Clock, vault: Vault) -> None:
    (vault.inbox_dir / "scan.pdf").write_bytes(b"%PDF-1.4\x00\x01")
    handler.notice(str(vault.inbox_dir / "scan.pdf"))
    step(handler, clock, 0.5)
    step(handler, clock, 0.5)
    reason = (vault.inbox_dir / "rejected" / "scan.pdf.reason.txt").read_text()
    assert reason.startswith("binary file")
    assert handler.book.data["last_ingest"]["status"] == "rejected"
    assert handler.book.data["errors"] == 0  # a bad file is not a daemon error


def test_crossing_the_token_threshold_consolidates(handler: Handler, clock: Clock, vault: Vault) -> None:
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = 30\n")
    text = "The garden beds need compost in April. Tomatoes go in the south bed. Basil grows by the door.\n"
    (vault.inbox_dir / "garden.md").write_text(text * 2)
    lines: list[str] = []
    handler.log = lines.append
    handler.notice(str(vault.inbox_dir / "garden.md"))
    step(handler, clock, 0.5)
    step(handler, clock, 0.5)
    assert subjects(vault)[0].startswith("consolidate:")
    assert handler.book.data["last_consolidation"]["trigger"] == "tokens"
    assert vault.topic_files()
    [consolidated] = [line for line in lines if line.startswith("consolidated ")]
    topic = vault.rel_of(vault.topic_files()[0])
    assert "(tokens): committed " in consolidated and topic in consolidated
    assert step(handler, clock, 0.5) == 0  # consolidation's writes are memd's own


def test_checking_the_buffer_reads_the_buffer_not_the_whole_status(
    handler: Handler, clock: Clock, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check runs every few seconds for months: the full status walks every topic,
    # the index and git (about a second of CPU at 100,000 entries, measured).
    def whole_status(self: Memory) -> None:
        raise AssertionError("the daemon computed the whole status to check the buffer")

    monkeypatch.setattr(Memory, "status", whole_status)
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = 30\n")
    append_entries(vault, [NewEntry("The garden beds need compost in April. Tomatoes go in the south bed.")])
    assert handler.memory.due() is None
    more = "Basil grows by the door, the mint stays in its pot by the shed, and the beans climb the fence."
    append_entries(vault, [NewEntry(more), NewEntry(more.replace("beans", "peas"))])
    assert handler.memory.due() == "tokens"
    step(handler, clock, 5.0)
    assert subjects(vault)[0].startswith("consolidate:")
    assert handler.book.data["errors"] == 0


def test_an_old_buffer_consolidates_on_the_time_trigger(
    vault: Vault, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMD_NOW", "2026-11-21T08:00:00Z")
    append_entries(vault, [NewEntry("The car needs new winter tyres.")])
    handler = Handler(vault, clock=clock, quiet=QUIET, check_every=5.0, rescan_every=3600.0)
    handler.start()
    handler.run_due()
    assert not subjects(vault)[0].startswith("consolidate:")  # 0 s old: not due
    monkeypatch.setenv("MEMD_NOW", "2026-11-21T09:30:00Z")  # past the default 1h
    step(handler, clock, 5.0)
    assert subjects(vault)[0].startswith("consolidate:")
    assert handler.book.data["last_consolidation"]["trigger"] == "age"


def test_start_reconciles_what_changed_while_the_daemon_was_down(vault: Vault, clock: Clock) -> None:
    (vault.topics_dir / "coffee.md").write_text(COFFEE)
    (vault.inbox_dir / "note.md").write_text("The boiler service is due in March.\n")
    handler = Handler(vault, clock=clock, quiet=QUIET, rescan_every=3600.0)
    handler.start()
    assert "topics/coffee.md" in indexed(vault)
    step(handler, clock, 0.0)
    step(handler, clock, 0.5)
    assert (vault.inbox_dir / "done" / "note.md").exists()
    step(handler, clock, QUIET)
    assert "edit: topics/coffee.md|Test User" in subjects(vault)


def test_a_rescan_finds_changes_no_event_reported(handler: Handler, clock: Clock, vault: Vault) -> None:
    (vault.topics_dir / "coffee.md").write_text(COFFEE)  # no notice(): the watch missed it
    handler.rescan()
    step(handler, clock, 0.0)
    assert "topics/coffee.md" in indexed(vault)


def test_a_failing_consolidation_is_counted_and_retried_later(
    handler: Handler, clock: Clock, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memd.consolidation as module
    from memd.consolidation.run import ConsolidationError

    calls: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        calls.append("called")
        raise ConsolidationError("refused for the test")

    monkeypatch.setattr(module, "consolidate", refuse)
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = 3\n")
    append_entries(vault, [NewEntry("The car needs new winter tyres before December.")])
    step(handler, clock, 5.0)
    step(handler, clock, 5.0)
    assert calls == ["called"]  # backed off, not retried in a tight loop
    assert handler.book.data["errors"] == 1
    assert "refused for the test" in handler.book.data["last_error"]["message"]
    step(handler, clock, 60.0)
    assert calls == ["called", "called"]


def test_when_inotify_runs_out_of_watches_the_daemon_polls(vault: Vault) -> None:
    class Exhausted:
        def schedule(self, *args: object, **kwargs: object) -> None:
            return None

        def start(self) -> None:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

        def stop(self) -> None:
            return None

    observer, mode, note = start_observer(vault, lambda event: None, factory=Exhausted)
    try:
        assert mode == "polling"
        assert note is not None and "sysctl fs.inotify.max_user_watches" in note
    finally:
        observer.stop()
        observer.join(timeout=5)


def test_one_daemon_per_vault(vault: Vault) -> None:
    first = DaemonLock(vault)
    first.acquire()
    try:
        assert running_pid(vault) is not None
        with pytest.raises(VaultError, match="already running"):
            DaemonLock(vault).acquire()
    finally:
        first.release()
    assert running_pid(vault) is None


def test_daemon_commands_without_a_running_daemon(memd: Memd) -> None:
    assert memd("daemon", "status").output.startswith("daemon: not running")
    assert json.loads(memd("daemon", "status", "--json").output)["running"] is False
    assert memd("daemon", "stop").output.strip() == "no daemon was running"


def test_status_of_a_daemon_that_was_killed_says_it_ended_without_stopping(memd: Memd, vault: Vault) -> None:
    # What a daemon killed with SIGKILL leaves: its record says running, and no process holds the lock.
    (vault.meta_dir / "daemon.json").write_text(
        json.dumps({"pid": 4242, "state": "running", "updated": "2026-11-30T10:00:00Z", "errors": 0})
    )
    shown = memd("daemon", "status").output
    assert shown.startswith("daemon: not running (it ended without stopping, last heard from 2026-11-30T10:00:00Z")
    assert ".memd/logs/daemon.log" in shown
    data = json.loads(memd("daemon", "status", "--json").output)
    assert data["running"] is False and data["state"] == "ended"


def test_install_writes_a_systemd_user_unit(memd: Memd, vault: Vault) -> None:
    shown = memd("daemon", "install", "--print").output
    assert f"-m memd --vault {vault.root} daemon run" in shown
    assert "Restart=on-failure" in shown
    written = memd("daemon", "install").output
    units = list((Path.home() / ".config" / "systemd" / "user").glob("memd-vault-*.service"))
    assert len(units) == 1 and units[0].read_text() == shown
    assert f"systemctl --user enable --now {units[0].name}" in written
    assert "removed" in memd("daemon", "uninstall").output
    assert not units[0].exists()


def test_the_cli_does_not_import_watchdog_until_a_daemon_runs() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom memd.cli import main\n"
        "CliRunner().invoke(main, ['--help'])\nCliRunner().invoke(main, ['daemon', '--help'])\n"
        "print('watchdog' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel watch is Linux's")
def test_an_idle_daemon_readies_its_index_so_its_first_search_stats_no_file(
    vault: Vault, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memd.index import watch

    from .test_index_fresh import TOPIC, settle

    (vault.topics_dir / "coffee.md").write_text(TOPIC, encoding="utf-8")
    settle(vault)  # written an hour ago: the folders' stamps can be trusted
    handler = Handler(vault, clock=clock, debounce=0.5, quiet=QUIET, check_every=5.0, rescan_every=3600.0)
    handler.start()
    for _ in range(20):  # until nothing is due
        if not handler.run_due():
            break
    assert handler.ready_to_search
    by_stats: list[object] = []
    monkeypatch.setattr(watch, "unchanged", lambda *args: by_stats.append(args) or False)
    found = handler.memory.search("oat milk", limit=3)
    assert [hit["path"] for hit in found.results][:1] == ["topics/coffee.md"]
    assert by_stats == []  # the watch set up while idle vouched for the files


def test_the_log_names_every_file_a_hand_edit_commit_holds(handler: Handler, clock: Clock, vault: Vault) -> None:
    lines: list[str] = []
    handler.log = lines.append
    (vault.topics_dir / "tea.md").write_text("# Tea\n- Sam likes green tea\n")  # saved with no event seen
    edit(handler, "topics/coffee.md", COFFEE)
    step(handler, clock, 0.5)
    step(handler, clock, QUIET)
    [committed] = [line for line in lines if line.startswith("committed hand edit")]
    assert committed.endswith("(topics/coffee.md, topics/tea.md)")
    assert handler.book.data["last_commit"]["files"] == ["topics/coffee.md", "topics/tea.md"]


def test_an_unreadable_file_is_logged_once_and_the_daemon_carries_on(
    vault: Vault, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault.current.chmod(0)  # what `chmod 000 CURRENT.md` does (root reads it anyway: the read fails below too)
    real = Path.read_bytes

    def read_bytes(path: Path) -> bytes:
        if path == vault.current:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    lines: list[str] = []
    handler = Handler(vault, clock=clock, quiet=QUIET, rescan_every=3600.0, log=lines.append)
    handler.start()
    handler.notice(str(vault.current))
    step(handler, clock, 0.5)
    assert lines == ["cannot read CURRENT.md (permission denied); left alone until it can be read"]
    edit(handler, "topics/coffee.md", COFFEE)  # the rest of the vault is still watched
    step(handler, clock, 0.5)
    step(handler, clock, QUIET)
    assert "edit: topics/coffee.md|Test User" in subjects(vault)
    vault.current.chmod(0o644)
    monkeypatch.setattr(Path, "read_bytes", real)
    handler.notice(str(vault.current))
    step(handler, clock, 0.5)
    assert handler.seen["CURRENT.md"] == file_hash(vault.current)


def test_a_git_reset_is_noticed_and_the_entries_it_took_are_put_back(
    handler: Handler, clock: Clock, vault: Vault, memd: Memd
) -> None:
    lines: list[str] = []
    handler.log = lines.append
    memd("add", "Pears are ripe on the north wall")
    memd("add", "Plums need netting against the birds")
    memd("consolidate")
    filed = [vault.current, *vault.topic_files()]
    for path in filed:  # the daemon sees what the consolidation wrote
        handler.notice(str(path))
    step(handler, clock, 0.5)
    step(handler, clock, QUIET)
    subprocess.run(["git", "-C", str(vault.root), "reset", "-q", "--hard", "HEAD~1"], check=True)
    assert "2 entries memd acknowledged are in no file" in memd("status").output
    for path in filed:
        handler.notice(str(path))
    step(handler, clock, 0.5)
    step(handler, clock, QUIET)
    assert "Pears are ripe" in vault.current.read_text() and "Plums need netting" in vault.current.read_text()
    assert "put back 2 entries an editor's save had removed" in lines
    assert any("put back 2 entries" in note for note in handler.book.data["notes"])
    assert "in no file" not in memd("status").output
    memd("add", "Apples next week")
    memd("consolidate")
    assert json.loads(memd("verify", "--json").output)["ok"]
