"""Never lose a memory while people, editors, the daemon and crashes act at once."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memd import Memory
from memd.consolidation import consolidate, recover, verify_vault
from memd.consolidation.verify import superseded_in
from memd.engine.base import Item, Rewrite, Section
from memd.engine.offline import OfflineEngine
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.journal import owed
from memd.vault.vault import Vault

from .conftest import REPO, Memd


def git(vault: Vault, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault.root), *args], capture_output=True, text=True, check=True).stdout


def live_seqs(vault: Vault) -> Counter[int]:
    counts: Counter[int] = Counter()
    for path in vault.entry_files():
        for located in vault.read(path).signed():
            counts.update(located.entry.signature.seq)  # type: ignore[union-attr]
    return counts


def all_text(vault: Vault) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in vault.entry_files())


# -- appends ------------------------------------------------------------------------


def test_an_append_keeps_what_an_editor_wrote_a_moment_before(vault: Vault) -> None:
    append_entries(vault, [NewEntry("Takes coffee with oat milk")])
    with open(vault.current, "a", encoding="utf-8") as handle:  # an editor appends, no lock taken
        handle.write("A line typed by hand without a newline at the end")
    append_entries(vault, [NewEntry("Allergic to peanuts")])
    text = vault.current.read_text()
    assert "A line typed by hand without a newline at the end\n- <seq=2," in text
    assert "Takes coffee with oat milk" in text


def test_entries_an_editors_stale_save_wiped_are_put_back(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk")
    stale = memd.vault.current.read_text()  # an editor opens CURRENT.md ...
    memd("add", "Allergic to peanuts")  # ... memd appends meanwhile ...
    memd.vault.current.write_text(stale + "Note typed by hand.\n")  # ... the editor saves its old copy
    result = memd("consolidate")
    assert "put back 1 entries" in result.output
    text = all_text(memd.vault)
    assert "Allergic to peanuts" in text and "Note typed by hand." in text
    assert set(live_seqs(memd.vault)) == {1, 2} and max(live_seqs(memd.vault).values()) == 1
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_stale_copy_of_lines_typed_by_hand_is_not_filed_again(memd: Memd) -> None:
    notes = ["- Car: MOT due 14 March", "- Garden: fig tree pruned", "- Dentist: filling on Friday"]
    typed = memd.vault.current.read_text() + "\n".join(notes) + "\n"
    memd.vault.current.write_text(typed)  # typed by hand, unsigned: memd adopts them
    memd("consolidate")
    memd.vault.current.write_text(typed + "- Car: new wipers fitted\n")  # an editor saves its old copy, one line more
    result = memd("consolidate")
    assert "dropped 3 identical copies" in result.output
    entries = [line for line in all_text(memd.vault).splitlines() if line.startswith("- <seq=")]
    for note in [*notes, "- Car: new wipers fitted"]:
        assert sum(line.endswith(f"> {note[2:]}") for line in entries) == 1
    assert sorted(live_seqs(memd.vault)) == [1, 2, 3, 4] and max(live_seqs(memd.vault).values()) == 1
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_stale_copy_of_moved_entries_is_not_filed_twice(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk\nRuns on Tuesdays along the river")
    stale = memd.vault.current.read_text()
    memd("consolidate")
    # An editor saves its old copy, with one line changed by the person.
    memd.vault.current.write_text(stale.replace("Runs on Tuesdays", "Runs on Thursdays"))
    memd("add", "Allergic to peanuts")
    result = memd("consolidate")
    assert "dropped 1 identical copies, kept 1 changed ones as new entries" in result.output
    counts = live_seqs(memd.vault)
    assert max(counts.values()) == 1
    assert "Runs on Thursdays" in all_text(memd.vault) and "Runs on Tuesdays" in all_text(memd.vault)
    assert json.loads(memd("verify", "--json").output)["ok"]


def _merge_tea_topics(memd: Memd) -> tuple[str, str, str]:
    """Two small similar topics that the next consolidation merges; returns the
    absorbed topic's id and text as an editor had it open, and the survivor's id."""
    topics = memd.vault.topics_dir
    (topics / "tea.md").write_text(
        '---\nid: "tea"\nsummary: "green tea"\nupdated: 2026-01-01T00:00:00Z\n---\n'
        "# Tea\n- <seq=100> Drinks green tea daily\n"
    )
    (topics / "tea-2.md").write_text(
        '---\nid: "tea-2"\nsummary: "green tea jasmine"\nupdated: 2026-01-02T00:00:00Z\n---\n'
        "# Jasmine tea\n- <seq=101> Green tea with jasmine\n- <seq=102> Jasmine pearls from the market\n"
    )
    git(memd.vault, "add", "-A")
    git(memd.vault, "commit", "-qm", "tea notes")
    opened = {name: (topics / f"{name}.md").read_text() for name in ("tea", "tea-2")}
    memd("add", "Bought a green tea set with jasmine flowers")
    [(survivor, absorbed)] = consolidate(memd.vault).merges
    return absorbed, opened[absorbed], survivor


def test_an_editors_stale_save_of_a_merged_topic_files_nothing_twice(memd: Memd) -> None:
    absorbed, stale, survivor = _merge_tea_topics(memd)
    assert not (memd.vault.topics_dir / f"{absorbed}.md").exists()
    # The editor still had the absorbed topic open, and saves it, one line added by the person.
    (memd.vault.topics_dir / f"{absorbed}.md").write_text(stale + "A note typed in the old file.\n")
    memd("add", "Steeps oolong for three minutes")
    result = memd("consolidate")
    copies = stale.count("- <seq=")
    assert f"dropped {copies} identical copies, kept 0 changed ones as new entries" in result.output
    assert max(live_seqs(memd.vault).values()) == 1
    text = all_text(memd.vault)
    assert "A note typed in the old file." in text and "Steeps oolong" in text
    for words in ("Drinks green tea daily", "Green tea with jasmine", "Jasmine pearls from the market"):
        assert text.count(f"> {words}") == 1, words  # one entry (the summary may quote it too)
    left = memd.vault.topics_dir / f"{absorbed}.md"  # what is left (prose) may be merged away again
    assert not left.exists() or "- <seq=" not in left.read_text()
    assert stale.splitlines()[-1] in (memd.vault.topics_dir / f"{survivor}.md").read_text()
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_stale_save_stamped_in_the_same_second_as_the_merge_is_settled_too(memd: Memd) -> None:
    """Two consolidations in one second leave the old copy and memd's with one
    ``updated`` stamp: nothing says which is newer, and the vault must still move on."""
    absorbed, stale, survivor = _merge_tea_topics(memd)
    stamp = re.search(r"^updated: (.+)$", (memd.vault.topics_dir / f"{survivor}.md").read_text(), re.M)
    assert stamp is not None
    tied = re.sub(r"^updated: .+$", f"updated: {stamp.group(1)}", stale, flags=re.M)
    (memd.vault.topics_dir / f"{absorbed}.md").write_text(tied + "A note typed in the old file.\n")
    memd("add", "Steeps oolong for three minutes")
    result = memd("consolidate")
    assert f"dropped {stale.count('- <seq=')} identical copies" in result.output
    assert max(live_seqs(memd.vault).values()) == 1
    text = all_text(memd.vault)
    for words in ("Drinks green tea daily", "Green tea with jasmine", "A note typed in the old file.", "Steeps oolong"):
        assert words in text, words
    assert json.loads(memd("verify", "--json").output)["ok"]
    memd("add", "Brews genmaicha on Sundays")
    memd("consolidate")
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_an_entry_pasted_twice_into_a_topic_is_settled_not_a_stuck_vault(memd: Memd) -> None:
    memd("add", "Walks the dog at six\nDrinks green tea daily")
    memd("consolidate")
    [path] = [p for p in memd.vault.topic_files() if "Walks the dog" in p.read_text()]
    entry = next(line for line in path.read_text().splitlines() if line.startswith("- <seq=") and "dog" in line)
    with path.open("a") as topic:  # pasted again, and once more with a word changed
        topic.write(f"{entry}\n{entry.replace('six', 'seven')}\n")
    memd("add", "Walks the dog at noon on Sundays\nDrinks green tea with honey")
    result = memd("consolidate")
    assert "dropped 1 identical copies, kept 1 changed ones as new entries" in result.output
    assert max(live_seqs(memd.vault).values()) == 1
    text = all_text(memd.vault)
    assert text.count("> Walks the dog at six") == 1 and "Walks the dog at seven" in text
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_copy_the_person_changed_in_a_stale_save_stays_as_their_new_entry(memd: Memd) -> None:
    absorbed, stale, _ = _merge_tea_topics(memd)
    lines = stale.splitlines()
    changed = "\n".join(line + " (decaf)" if line.startswith("- <seq=") else line for line in lines) + "\n"
    (memd.vault.topics_dir / f"{absorbed}.md").write_text(changed)
    memd("add", "Steeps oolong for three minutes")
    copies = stale.count("- <seq=")
    assert f"dropped 0 identical copies, kept {copies} changed ones" in memd("consolidate").output
    assert max(live_seqs(memd.vault).values()) == 1
    text = all_text(memd.vault)
    for line in lines:
        if line.startswith("- <seq="):
            words = line.split("> ", 1)[1]
            # memd's entry, and the person's copy as a new one (signed with a seq of its own)
            assert f"> {words}\n" in text and f"source=hand> {words} (decaf)\n" in text
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_verify_reports_a_buffered_entry_deleted_without_a_commit(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk\nAllergic to peanuts\nRuns on Tuesdays")
    assert json.loads(memd("verify", "--json").output)["buffered"] == 3
    lines = memd.vault.current.read_text().splitlines(True)
    memd.vault.current.write_text("".join(line for line in lines if "peanuts" not in line))
    result = memd("verify", ok=False)
    assert result.exit_code == 1 and "acknowledged seqs 2 are in no file" in result.output


def test_a_deleted_current_md_is_the_persons_removal_of_exactly_its_entries(memd: Memd) -> None:
    memd("add", "\n".join(f"Entry number {n} about the garden shed" for n in range(10)))
    memd.vault.current.unlink()
    memory = Memory.open(memd.vault.root)
    assert memory.commit_hand_edits() is not None  # what the daemon does once the person is quiet
    assert "Memd-Removed: 1-10" in git(memd.vault, "log", "-1", "--format=%B")
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["deleted_by_hand"] == 10


def test_forget_removes_an_entry_on_purpose_and_it_stays_gone(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk\nAllergic to peanuts\nRuns on Tuesdays")
    result = json.loads(memd("forget", "2", "--json").output)
    assert [r["text"] for r in result["removed"]] == ["Allergic to peanuts"] and result["commit"]
    body = git(memd.vault, "log", "-1", "--format=%an|%B")
    assert body.startswith("Test User|forget: seq 2") and "Memd-Removed: 2" in body
    memd("consolidate")
    assert "peanuts" not in all_text(memd.vault)
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["deleted_by_hand"] == 1
    assert "no entry holds seq 99" in memd("forget", "99", ok=False).output


def test_forget_takes_the_entry_out_of_its_topics_summary_too(memd: Memd) -> None:
    memd("add", "Likes hiking in the Alps")
    memd("add", "Dana's phone number is 555-0101")
    memd("consolidate")
    assert "Likes hiking in the Alps" in all_text(memd.vault)
    [seq] = [s for s, text in _entries(memd.vault).items() if text == "Likes hiking in the Alps"]
    memd("forget", seq)
    # The summary quoted it: forgotten words leave the current files (git history keeps them).
    assert "hiking" not in all_text(memd.vault)
    assert "Dana's phone number is 555-0101" in all_text(memd.vault)
    assert memd("lint").exit_code == 0 and json.loads(memd("verify", "--json").output)["ok"]


def _entries(vault: Vault) -> dict[str, str]:
    return {
        str(e.entry.signature.seq): e.entry.text  # type: ignore[union-attr]
        for path in [vault.current, *vault.topic_files()]
        for e in vault.read(path).signed()
    }


# -- consolidation beside writers and people -----------------------------------------------


def test_appends_made_during_a_consolidation_stay_in_the_buffer(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk\nAllergic to peanuts")

    class AppendsMeanwhile(OfflineEngine):
        def summarise(self, sections: list[Section]) -> str:
            if "Arrived during" not in memd.vault.current.read_text():
                append_entries(memd.vault, [NewEntry("Arrived during the consolidation")])
            return super().summarise(sections)

    outcome = consolidate(memd.vault, engine=AppendsMeanwhile())
    assert outcome.entries == 2 and outcome.commit
    assert "Arrived during the consolidation" in memd.vault.current.read_text()
    assert "Arrived during" not in git(memd.vault, "show", "HEAD:topics/" + outcome.touched_topics[0] + ".md")
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_hand_edit_during_consolidation_is_committed_as_the_persons_and_the_run_redone(memd: Memd) -> None:
    topic = memd.vault.topics_dir / "coffee.md"
    topic.write_text('---\nid: "coffee"\nsummary: "coffee"\n---\n# Coffee\n- <seq=1> Takes coffee with oat milk\n')
    git(memd.vault, "add", "-A")
    git(memd.vault, "commit", "-qm", "a topic")
    memd("add", "Takes a flat white coffee with oat milk in the morning")
    edits = []

    class EditsOnce(OfflineEngine):
        def summarise(self, sections: list[Section]) -> str:
            if not edits:
                edits.append(1)
                topic.write_text(topic.read_text() + "Typed in an editor while memd ran.\n")
            return super().summarise(sections)

    outcome = consolidate(memd.vault, engine=EditsOnce())
    assert outcome.commit and "Typed in an editor while memd ran." in topic.read_text()
    log = git(memd.vault, "log", "-3", "--format=%an|%s").splitlines()
    assert log[0].startswith("memd|consolidate:") and log[1] == "Test User|edit: topics/coffee.md"
    memd_diff = git(memd.vault, "show", "HEAD", "--format=")
    added = [line for line in memd_diff.splitlines() if line.startswith("+")]
    assert not [line for line in added if "Typed in an editor" in line]  # it is in the person's commit only


def test_a_topic_caught_half_saved_in_place_is_read_again_and_no_seq_is_filed_twice(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk")
    memd("consolidate")
    [topic] = memd.vault.topic_files()
    saved = topic.read_text()
    memd("add", "Allergic to peanuts")
    topic.write_text("")  # an editor saving in place has truncated the topic, and not yet written it

    class EditorFinishesTheSave(OfflineEngine):
        def rewrite(self, items: list[Item]) -> Rewrite:
            if not topic.read_text():
                topic.write_text(saved + "Note typed by hand.\n")
            return super().rewrite(items)

    outcome = consolidate(memd.vault, engine=EditorFinishesTheSave())
    assert outcome.commit and "dropped 1 identical copies" in " ".join(outcome.warnings)
    counts = live_seqs(memd.vault)
    assert set(counts) == {1, 2} and max(counts.values()) == 1
    assert "Note typed by hand." in topic.read_text()
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_stale_git_lock_is_removed_and_the_commit_made(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk")
    git_dir = memd.vault.root / ".git"
    (git_dir / "index.lock").write_text("")  # left by a git that was killed
    result = memd("consolidate")
    assert "committed" in result.output
    assert not (git_dir / "index.lock").exists()
    assert git(memd.vault, "log", "-1", "--format=%s").startswith("consolidate: 1 entries")
    assert git(memd.vault, "status", "--porcelain", "--", "topics", "CURRENT.md") == ""


def test_a_commit_git_refuses_is_owed_reported_and_made_later(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk")
    merge_head = memd.vault.root / ".git" / "MERGE_HEAD"
    merge_head.write_text(git(memd.vault, "rev-parse", "HEAD"))  # a merge is in progress
    result = memd("consolidate")
    assert "will commit it on its next run" in result.output
    assert owed(memd.vault) is not None
    assert memd("status", "--json").output.count("uncommitted") >= 1
    assert json.loads(memd("verify", "--json").output)["uncommitted"].startswith("consolidate: 1 entries")
    merge_head.unlink()
    memd("consolidate")
    assert owed(memd.vault) is None
    assert git(memd.vault, "log", "-1", "--format=%s").startswith("consolidate: 1 entries")
    assert json.loads(memd("verify", "--json").output)["ok"]


@pytest.mark.parametrize(
    "journal",
    [
        "{}",
        '{"message": "x", "changes": [{"path": "../escaped.md", "before": null, "after": "pwned"}]}',
        '{"message": "x", "changes": [{"path": "/tmp/abs.md", "before": null, "after": "pwned"}]}',
        '{"message": "x", "changes": [{"path": "CURRENT.md", "before": 7, "after": "x"}]}',
        '{"message": "x", "changes": [{"path": ".git/config", "before": null, "after": "x"}]}',
    ],
)
def test_a_journal_memd_did_not_write_is_set_aside_and_nothing_leaves_the_vault(
    memd: Memd, tmp_path: Path, journal: str
) -> None:
    memd("add", "Takes coffee with oat milk")
    before = memd.vault.current.read_bytes()
    pending = memd.vault.meta_dir / "journal" / "pending.json"
    pending.parent.mkdir(parents=True, exist_ok=True)
    pending.write_text(journal)
    result = memd("add", "Allergic to peanuts")
    assert "unreadable consolidation journal" in result.output
    assert pending.with_suffix(".broken").exists() and not pending.exists()
    assert not (memd.vault.root.parent / "escaped.md").exists() and not Path("/tmp/abs.md").exists()
    assert memd.vault.current.read_bytes().startswith(before)


# -- crashes, with people and the inbox acting before memd runs again ----------------------------


def run_memd(vault: Path, *args: str, crash_at: int | None = None) -> int:
    env = {**os.environ, "MEMD_VAULT": str(vault)}
    env.pop("MEMD_CRASH_AT", None)
    if crash_at is not None:
        env["MEMD_CRASH_AT"] = str(crash_at)
    return subprocess.run([sys.executable, "-m", "memd", *args], env=env, capture_output=True, cwd=REPO).returncode


@pytest.mark.slow
def test_a_kill_anywhere_then_a_hand_edit_an_ingest_and_a_kill_during_recovery_lose_nothing(
    memd: Memd, tmp_path: Path
) -> None:
    # Eight subjects, so the consolidation writes many topics and has many points to be killed at
    # (notes cut from one template, "violin lesson 1: notes about violin gear", are one topic by meaning).
    notes = [
        "Violin lesson moved to Tuesdays, bring the rosin",
        "The violin teacher wants slower scales in third position",
        "Bought a new violin bow, carbon fibre",
        "Sourdough starter needs feeding twice a day in summer",
        "The sourdough loaf came out flat, proof it longer",
        "Sourdough: 75% hydration, bake at 250 with the lid on",
        "Kayak trip on the river on Saturday, hire the double",
        "Practise the kayak roll in the pool first",
        "Kayak paddles from the club are too long for me",
        "Chess club meets on Thursday evenings at the library",
        "Lost the chess game to a knight fork again",
        "Study the Sicilian defence opening for chess",
        "The orchid on the windowsill has two new flower spikes",
        "Water the orchid once a week by soaking the roots",
        "Repot the orchid in bark after it flowers",
        "Telescope: Saturn's rings visible from the garden at 11pm",
        "Collimate the telescope mirror before the next clear night",
        "Bought a red torch for the telescope sessions",
        "Pottery class: the glaze on my bowl ran in the kiln",
        "Centre the clay properly before pulling up the walls",
        "The pottery studio is open on Sundays for practice",
        "Marathon training: 30 km long run this weekend",
        "Marathon shoes have 500 km on them, replace before race day",
        "Carb loading starts three days before the marathon",
    ]
    memd("add", "\n".join(notes))
    start = tmp_path / "start"
    shutil.copytree(memd.vault.root, start)
    note = tmp_path / "later.md"
    note.write_text("The boiler service is booked for March.\n")
    point = 0
    while True:
        point += 1
        trial = tmp_path / f"crash-{point}"
        shutil.copytree(start, trial)
        code = run_memd(trial, "consolidate", crash_at=point)
        if code == 0:
            break
        assert code == -9, f"kill point {point}: exit {code}"
        with open(trial / "CURRENT.md", "a", encoding="utf-8") as handle:  # a person types before memd runs again
            handle.write("Typed by hand after the crash.\n")
        for again in (1, 2):  # the next command is killed during recovery too
            run_memd(trial, "ingest", str(note), crash_at=again)
        assert run_memd(trial, "ingest", str(note)) == 0
        assert run_memd(trial, "consolidate") == 0
        vault = Vault(trial)
        recover(vault)
        counts = live_seqs(vault)
        assert set(range(1, 25)) <= set(counts), f"kill point {point}: lost {set(range(1, 25)) - set(counts)}"
        assert max(counts.values()) == 1, f"kill point {point}: a seq is live twice"
        text = all_text(vault)
        assert "Typed by hand after the crash." in text and "boiler service" in text
        assert not verify_vault(vault).problems, (point, verify_vault(vault).problems)
        assert not list(trial.rglob("*.memd-tmp"))
        assert not (trial / ".git" / "index.lock").exists() and not (trial / ".git" / "HEAD.lock").exists()
        shutil.rmtree(trial)
    assert point > 15, f"only {point - 1} kill points"


# -- everything at once -------------------------------------------------------------------------


def _start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "tests.workers", *args], cwd=REPO, stderr=subprocess.PIPE)


@pytest.mark.slow
@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_adders_a_consolidation_loop_and_an_editor_at_once_lose_nothing(
    memd: Memd, tmp_path: Path, daemon: bool
) -> None:
    vault = memd.vault
    vault.config_path.write_text('[consolidate]\nbuffer_tokens = 200\nbuffer_age = "1s"\n')
    env = {**os.environ, "MEMD_VAULT": str(vault.root)}
    runner = None
    if daemon:
        runner = subprocess.Popen(
            [sys.executable, "-m", "memd", "daemon", "run", "--quiet", "1"], env=env, cwd=REPO, stderr=subprocess.PIPE
        )
        time.sleep(2.0)
    seconds = 8.0
    outs = [tmp_path / f"adder-{n}.json" for n in range(4)]
    workers = [_start("adder", str(vault.root), f"writer{n}", "40", str(out)) for n, out in enumerate(outs)]
    if not daemon:
        workers.append(_start("consolidator", str(vault.root), str(seconds)))
    edits = tmp_path / "editor.json"
    workers.append(_start("editor", str(vault.root), str(seconds), str(edits)))
    for worker in workers:
        _, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err.decode()
    if runner is not None:
        time.sleep(3.0)
        runner.terminate()
        runner.communicate(timeout=60)
    Memory.open(vault.root).consolidate()  # settle: editor wipes are put back before anything is committed

    acknowledged = [item for out in outs for item in json.loads(out.read_text())]
    assert len(acknowledged) == 160, "every add was acknowledged (none refused)"
    counts = live_seqs(vault)
    report = verify_vault(vault)
    superseded = superseded_in(vault.read(p) for p in vault.topic_files())
    lost = [a for a in acknowledged if a["seq"] not in counts and a["seq"] not in superseded]
    assert not lost, f"{len(lost)} acknowledged entries lost, e.g. {lost[:3]}"
    assert max(counts.values()) == 1, [s for s, c in counts.items() if c > 1]
    text = all_text(vault)
    missing_text = [a["text"] for a in acknowledged if a["text"] not in text]
    assert not missing_text, missing_text[:3]
    hand = json.loads(edits.read_text())
    assert hand, "the editor saved files"
    missing_hand = [h["line"] for h in hand if h["line"] not in text]
    assert not missing_hand, missing_hand
    assert not report.problems, report.problems

    # A buffered entry deleted by hand, without a commit, is reported.
    [added] = Memory.open(vault.root).add("A fact that will be deleted by hand").added
    lines = vault.current.read_text().splitlines(True)
    vault.current.write_text("".join(line for line in lines if f"<seq={added.seq}," not in line) + "Tail.\n")
    assert any(str(added.seq) in problem for problem in verify_vault(vault).problems)


def test_an_old_copy_saved_read_only_is_left_alone_and_verify_names_it(memd: Memd) -> None:
    absorbed, stale, _ = _merge_tea_topics(memd)
    path = memd.vault.topics_dir / f"{absorbed}.md"
    path.write_text(stale)
    path.chmod(0o444)
    memd("add", "Steeps oolong for three minutes")
    result = memd("consolidate")  # the buffer is filed; the file memd may not write is not its to settle
    assert f"{absorbed}.md" in result.output and "read-only" in result.output
    assert path.read_text() == stale and "Steeps oolong" in all_text(memd.vault)
    report = memd("verify", ok=False)
    assert report.exit_code == 1 and "is in 2 entries" in report.output


def test_old_copies_are_only_reported_by_a_dry_run_and_untouched_when_not_due(memd: Memd) -> None:
    absorbed, stale, _ = _merge_tea_topics(memd)
    path = memd.vault.topics_dir / f"{absorbed}.md"
    path.write_text(stale)
    assert "dropped" not in memd("consolidate", "--if-due").output
    memd("add", "Steeps oolong for three minutes")
    assert "would drop" in memd("consolidate", "--dry-run").output
    assert path.read_text() == stale


def test_a_read_only_topic_with_a_typed_line_reserves_no_seqs(memd: Memd) -> None:
    topic = memd.vault.topics_dir / "bikes.md"
    topic.write_text('---\nid: "bikes"\nsummary: "bikes"\n---\n# Bikes\n- Rides a road bike\n')
    git(memd.vault, "add", "-A")
    git(memd.vault, "commit", "-qm", "bikes")
    topic.chmod(0o444)
    for text in ("Drinks tea daily", "Walks the dog at six"):
        memd("add", text)
        memd("consolidate")
    assert "- Rides a road bike" in topic.read_text()  # not memd's to sign: it may not write there
    assert json.loads(memd("status", "--json").output)["next_seq"] == max(live_seqs(memd.vault)) + 1


def test_an_entry_in_the_buffer_twice_is_settled_not_a_stuck_vault(memd: Memd) -> None:
    memd("add", "Drinks rooibos at night\nAllergic to peanuts")
    lines = memd.vault.current.read_text().splitlines(keepends=True)
    entries = [line for line in lines if line.startswith("- <seq=")]
    # What a torn read during an in-place save left: the same entries again, one changed by the person.
    changed = entries[1].replace("peanuts", "peanuts and cashews")
    with memd.vault.current.open("a") as current:
        current.write(entries[0] + changed)
    result = memd("consolidate")
    assert "dropped 1 identical copies, kept 1 changed ones" in result.output
    text = all_text(memd.vault)
    assert text.count("> Drinks rooibos at night") == 1
    assert "Allergic to peanuts\n" in text and "source=hand> Allergic to peanuts and cashews" in text
    assert json.loads(memd("verify", "--json").output)["ok"]
    memd("add", "Runs on Tuesdays")
    memd("consolidate")


def test_entries_missing_from_a_half_saved_buffer_are_not_put_back_twice(
    memd: Memd, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memd.consolidation import restore as restore_module

    memd("add", "\n".join(f"Garden note {n}: watered the beds" for n in range(20)))
    full = memd.vault.current.read_text()
    memd.vault.current.write_text("")  # truncated, as an in-place save does first
    real = restore_module.vanished
    reads = []

    def read_then_the_save_completes(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        if not reads:
            memd.vault.current.write_text(full)  # the editor finishes writing, just after memd's read
        reads.append(len(found))
        return found

    monkeypatch.setattr(restore_module, "vanished", read_then_the_save_completes)
    result = memd("consolidate")
    assert reads[0] == 20  # the torn read did see them gone
    assert "put back" not in result.output and "a second time" not in result.output
    assert max(live_seqs(memd.vault).values()) == 1
    assert json.loads(memd("verify", "--json").output)["ok"]


@pytest.mark.slow
def test_five_minutes_of_adders_a_consolidation_loop_a_stale_editor_and_the_daemon(memd: Memd, tmp_path: Path) -> None:
    """The long run: six adders, a consolidation loop, an editor whose saves
    are often stale (it types for up to two seconds) and the daemon, for
    five minutes. Nothing acknowledged is lost, no seq is live twice, verify
    is clean, and at least half of the consolidation attempts succeed."""
    vault = memd.vault
    vault.config_path.write_text('[consolidate]\nbuffer_tokens = 400\nbuffer_age = "2s"\n')
    env = {**os.environ, "MEMD_VAULT": str(vault.root)}
    seconds = float(os.environ.get("MEMD_SOAK_SECONDS", "300"))
    runner = subprocess.Popen(
        [sys.executable, "-m", "memd", "daemon", "run", "--quiet", "1"], env=env, cwd=REPO, stderr=subprocess.PIPE
    )
    outs = [tmp_path / f"adder-{n}.json" for n in range(6)]
    workers = [_start("slow-adder", str(vault.root), f"writer{n}", str(seconds), str(o)) for n, o in enumerate(outs)]
    tally = tmp_path / "consolidations.json"
    workers.append(_start("consolidator", str(vault.root), str(seconds), str(tally)))
    edits = tmp_path / "editor.json"
    workers.append(_start("editor", str(vault.root), str(seconds), str(edits), "2.0"))
    for worker in workers:
        _, err = worker.communicate(timeout=seconds * 10 + 300)  # a hang guard, not a time limit
        assert worker.returncode == 0, err.decode()
    runner.terminate()
    runner.communicate(timeout=300)
    Memory.open(vault.root).consolidate()  # settle: editor wipes are put back before anything is committed

    acknowledged = [item for out in outs for item in json.loads(out.read_text())]
    counts = live_seqs(vault)
    superseded = superseded_in(vault.read(p) for p in vault.topic_files())
    lost = [a for a in acknowledged if a["seq"] not in counts and a["seq"] not in superseded]
    assert not lost, f"{len(lost)} of {len(acknowledged)} acknowledged entries lost, e.g. {lost[:3]}"
    assert max(counts.values()) == 1, [s for s, c in counts.items() if c > 1]
    assert not verify_vault(vault).problems
    done = json.loads(tally.read_text())
    assert done["ok"] >= done["failed"], done
    memd("add", "After the storm")
    memd("consolidate")


def test_forget_takes_a_heading_left_empty_and_a_topic_left_empty_with_it(memd: Memd) -> None:
    # The heading and the file name were made from the words forgotten.
    running = memd.vault.topics_dir / "running.md"
    garden = memd.vault.topics_dir / "garden.md"
    running.write_text(
        '---\nid: "running"\n---\n# Running\nMy runs.\n\n## Plan\n- Long run on Sundays\n\n'
        "## Injuries\n- Left knee hurts after 15 km\n\n## Races\n"
    )
    garden.write_text('---\nid: "garden"\n---\n# Garden\n- Tomatoes need staking in June\n')
    memd("add", "Dentist on Friday")
    memd("consolidate")
    seqs = {text: seq for seq, text in _entries(memd.vault).items()}
    # Obsidian links the topics (as consolidation's related.py would).
    running.write_text(running.read_text().replace('id: "running"\n', 'id: "running"\nrelated:\n- "[[garden]]"\n'))
    subprocess.run(["git", "-C", str(memd.vault.root), "commit", "-qam", "link"], check=True)
    memd("forget", seqs["Left knee hurts after 15 km"])
    text = running.read_text()
    assert "Injuries" not in text and "knee" not in text
    # What still heads something, or a person wrote with nothing under it, stays.
    assert "## Plan\n- <seq=" in text and "## Races" in text and "My runs." in text
    memd("forget", seqs["Tomatoes need staking in June"])
    assert not garden.exists() and "garden" not in running.read_text()
    assert git(memd.vault, "status", "--porcelain") == ""
    assert memd("lint").exit_code == 0 and json.loads(memd("verify", "--json").output)["ok"]


def test_forget_keeps_a_topic_left_empty_when_a_person_edited_it_since_the_last_commit(memd: Memd) -> None:
    memd("add", "Shed roof leaks in the corner")
    memd("consolidate")
    [topic] = memd.vault.topic_files()
    [seq] = _entries(memd.vault)
    # A tag typed by hand and not committed yet lives nowhere but in this file.
    topic.write_text(topic.read_text().replace("---\n#", "tags:\n- diy\n---\n#", 1))
    memd("forget", seq)
    assert topic.exists() and "diy" in topic.read_text() and "leaks" not in topic.read_text()
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_an_entry_deleted_from_a_topic_and_put_back_counts_as_live_not_deleted(memd: Memd) -> None:
    for text in ("Takes coffee with oat milk", "Drinks decaf coffee after 2pm", "Coffee beans from the market"):
        memd("add", text)
    memd("consolidate")
    [topic] = memd.vault.topic_files()
    topic.write_text("".join(line for line in topic.read_text().splitlines(True) if "decaf" not in line))
    assert "put back 1 entries" in memd("consolidate").output
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["live"] == 3 and report["deleted_by_hand"] == 0


def test_an_entry_whose_signature_a_person_took_off_is_signed_anew_not_put_back_beside_it(memd: Memd) -> None:
    # What `memd sync` asks for when two clones gave one seq to two entries.
    memd("add", "D wrote this")
    current = memd.vault.current
    current.write_text(re.sub(r"<seq=1,[^>]*> ", "", current.read_text()))
    assert current.read_text().endswith("- D wrote this\n")
    result = memd("consolidate")
    assert "put back" not in result.output
    entries = [line for line in all_text(memd.vault).splitlines() if line.startswith("- ")]
    assert sum(1 for line in entries if line.endswith("D wrote this")) == 1
    assert json.loads(memd("verify", "--json").output)["ok"]
