"""`memd diff`: a consolidation (or any range of commits) in memory terms."""

from __future__ import annotations

import gc
import json
import random
import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memd import Memory
from memd.app.init import init_vault
from memd.core.signature import SeqSet
from memd.review.spans import RunIndex, minus, overlaps, runs
from memd.vault.vault import Vault

from .conftest import Memd
from .review_story import BREAD, COFFEE, NEW_CAR, NEW_PHONE, OLD_CAR, OLD_PHONE, Story, build


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return build(tmp_path_factory.mktemp("story") / "vault")


@pytest.fixture
def memd(story: Story, tmp_path: Path) -> Memd:
    return Memd(story.copy(tmp_path / "vault"))


def diff(memd: Memd, *args: str) -> dict:  # type: ignore[type-arg]
    return json.loads(memd("diff", *args, "--json").output)


def kinds(data: dict) -> set[tuple[str, str]]:  # type: ignore[type-arg]
    return {(change["kind"], change["seq"]) for change in data["entries"]}


def test_the_default_is_the_last_consolidation(memd: Memd, story: Story) -> None:
    data = diff(memd)
    assert data["target"] == story.commits["C6"] and [c["sha"] for c in data["commits"]] == [story.commits["C6"]]
    [change] = data["entries"]
    assert (change["kind"], change["seq"], change["text"]) == ("filed", str(story.seqs[BREAD]), BREAD)
    [topic] = story.outcomes["C6"].new_topics
    assert data["topics"] == [{"kind": "created", "topic": topic, "detail": f"new topic topics/{topic}.md"}]
    assert change["entry"]["cite"].endswith(f"@{story.commits['C6'][:7]}")


def test_a_consolidation_with_supersessions_lists_exactly_its_changes(memd: Memd, story: Story) -> None:
    s = story.seqs
    data = diff(memd, story.commits["C2"])
    assert kinds(data) == {
        ("filed", str(s[NEW_PHONE])),
        ("filed", str(s[NEW_CAR])),
        ("superseded", str(s[OLD_PHONE])),
        ("superseded", str(s[OLD_CAR])),
    }
    by_seq = {c["seq"]: c for c in data["entries"]}
    phone = by_seq[str(s[OLD_PHONE])]
    assert phone["text"] == OLD_PHONE and phone["superseded_by"]["seq"] == str(s[NEW_PHONE])
    assert phone["superseded_by"]["entry"]["text"] == NEW_PHONE
    assert phone["before"][0]["cite"].endswith(f"@{story.commits['C1'][:7]}")  # where it was, in the older commit
    car = by_seq[str(s[OLD_CAR])]
    assert car["text"] == OLD_CAR and "in the buffer" in car["detail"]
    assert car["superseded_by"]["entry"]["text"] == NEW_CAR
    assert data["summary"] == {"filed": 2, "superseded": 2}
    # Dana's notes became a topic of their own, out of the month's notes, which it left empty.
    assert {(t["kind"], t["topic"]) for t in data["topics"]} == {("created", "dana"), ("deleted", "notes-2026-09")}
    text = memd("diff", story.commits["C2"]).output
    assert "superseded seq 4" in text.replace("  ", " ") and OLD_CAR in text and NEW_PHONE in text


def test_a_split_lists_the_filed_and_moved_entries_and_the_new_topics(memd: Memd, story: Story) -> None:
    outcome = story.outcomes["C4"]
    [(split, parts)] = outcome.splits
    data = diff(memd, story.commits["C4"])
    filed = {m.seqs for m in outcome.moves}
    moved = {c["seq"] for c in data["entries"] if c["kind"] == "moved"}
    assert {c["seq"] for c in data["entries"] if c["kind"] == "filed"} == filed
    assert kinds(data) == {("filed", seq) for seq in filed} | {("moved", seq) for seq in moved}
    assert moved  # entries filed by C3 left the split topic
    for change in data["entries"]:
        if change["kind"] == "moved":
            assert change["before"][0]["path"] == f"topics/{split}.md"
            assert change["entry"]["path"] in {f"topics/{p}.md" for p in parts}
    topics = {(t["kind"], t["topic"]) for t in data["topics"]}
    assert ("split", split) in topics
    assert {("created", p) for p in parts} <= topics


def test_a_merge_and_a_hand_edit(memd: Memd, story: Story) -> None:
    [(survivor, absorbed)] = story.outcomes["C5"].merges
    data = diff(memd, story.commits["C5"])
    assert ("merged", absorbed) in {(t["kind"], t["topic"]) for t in data["topics"]}
    assert ("deleted", absorbed) in {(t["kind"], t["topic"]) for t in data["topics"]}
    for change in data["entries"]:
        if change["kind"] == "moved":
            assert change["before"][0]["path"] == f"topics/{absorbed}.md"
            assert change["entry"]["path"] == f"topics/{survivor}.md"
    edit = diff(memd, story.commits["E"])
    [change] = edit["entries"]
    assert (change["kind"], change["seq"], change["by_hand"]) == ("edited", str(story.seqs[COFFEE[0]]), True)
    assert change["before"][0]["text"] == COFFEE[0] and change["text"] == "Takes coffee with soy milk"


def test_a_range_of_commits_and_dates(memd: Memd, story: Story) -> None:
    data = diff(memd, f"{story.commits['C1']}..{story.commits['C2']}")
    assert data == diff(memd, story.commits["C2"])
    whole = diff(memd, "2026-09-05..2026-09-16")  # C2 and the hand edit
    assert {c["sha"] for c in whole["commits"]} == {story.commits["C2"], story.commits["E"]}
    assert ("edited", str(story.seqs[COFFEE[0]])) in kinds(whole)
    assert ("superseded", str(story.seqs[OLD_PHONE])) in kinds(whole)
    # A start before the vault's first commit is the vault before anything: every entry is new.
    everything = diff(memd, "2000-01-01..HEAD")
    assert everything["base"] is None and story.commits["C1"] in {c["sha"] for c in everything["commits"]}
    assert {("filed", str(story.seqs[BREAD])), ("superseded", str(story.seqs[OLD_PHONE]))} <= kinds(everything)
    backwards = memd("diff", "HEAD..HEAD~3", ok=False)
    assert backwards.exit_code == 1
    assert (
        backwards.output.strip()
        == "memd: 'HEAD..HEAD~3' runs backwards: HEAD is newer than HEAD~3 (write HEAD~3..HEAD)"
    )


def test_bad_revisions_are_one_line_errors(memd: Memd) -> None:
    for args in (["nosuchrev"], ["HEAD..nosuch"], ["--", "-x"]):
        result = memd("diff", *args, ok=False)
        assert result.exit_code != 0 and "Traceback" not in result.output
    result = memd("diff", "nosuchrev", ok=False)
    assert result.output.strip() == "memd: no commit 'nosuchrev' in the vault's history (try `memd log`)"


def test_a_fresh_vault_has_nothing_to_diff(vault) -> None:  # type: ignore[no-untyped-def]
    result = Memd(vault)("diff", ok=False)
    assert result.exit_code == 1 and "no consolidation yet" in result.output


def reorganise(vault: Vault, count: int) -> str:
    """``count`` entries in topics, committed; then one commit moves every one to
    another file and section, changes the words of one in ten and folds one in
    twenty into the entry before it. Returns the ``A..B`` range of that commit."""

    def write(entries: list[tuple[str, str]], prefix: str) -> None:
        for old in vault.topics_dir.glob("*.md"):
            old.unlink()
        for n in range(0, len(entries), 50):
            lines = ["---", f"id: {prefix}-{n}", "summary: notes", "---"]
            for h in range(5):
                lines.append(f"# {prefix} {h}")
                lines += [
                    f"- <seq={seqs},time=2026-03-01T09:00,source=user> {said}"
                    for seqs, said in entries[n + h : n + 50 : 5]
                ]
            (vault.topics_dir / f"{prefix}-{n}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def commit(message: str) -> str:
        subprocess.run(["git", "-C", str(vault.root), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(vault.root), "commit", "-q", "-m", message], check=True)
        return subprocess.run(
            ["git", "-C", str(vault.root), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()

    entries = [(str(seq), f"note number {seq} about the garden") for seq in range(1, count + 1)]
    write(entries, "before")
    base = commit("notes")
    after: list[tuple[str, str]] = []
    for i, (seqs, said) in enumerate(entries):
        if i % 20 == 19:
            folded, words = after.pop()
            after.append((f"{folded}+{seqs}", words))
        else:
            after.append((seqs, said + " again" if i % 10 == 3 else said))
    random.Random(count).shuffle(after)
    write(after, "after")
    return f"{base}..{commit('reorganise')}"


def test_a_reorganisation_of_many_entries_is_listed_entry_by_entry(vault: Vault) -> None:
    spec = reorganise(vault, 400)
    found = Memory.open(vault.root).diff(spec)
    assert found.count("merged") == 20  # one in twenty folded into the entry before it
    assert found.count("moved") == 360  # every other one changed file and section
    assert sum("words changed" in change.detail for change in found.entries) == 40
    assert len(found.entries) == 380 and not found.count("removed") and not found.count("added")


def least_cpu(work: Callable[[], object], runs: int = 3) -> float:
    """The least CPU of a few runs of ``work``, the collector held off while it
    runs: in a whole test session a full collection walks every object the
    earlier tests left (hundreds of ms), a pause that says nothing of ``work``."""
    spent = []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            work()
            spent.append(time.process_time() - started)
        finally:
            gc.enable()
    return min(spent)


def test_diff_costs_what_it_reads_not_its_square(tmp_path: Path) -> None:
    cpu = {}
    for count in (500, 2000):
        vault = init_vault(tmp_path / str(count)).vault
        spec = reorganise(vault, count)
        memory = Memory.open(vault.root)
        assert len(memory.diff(spec).entries) == count - count // 20
        cpu[count] = least_cpu(partial(memory.diff, spec))
    # Four times the entries: about four times the work (pairing every new entry
    # against every old one made it sixteen).
    assert cpu[2000] < 8 * cpu[500]


@given(st.lists(st.lists(st.tuples(st.integers(1, 60), st.integers(0, 6)), max_size=4), max_size=12), st.data())
def test_seq_runs_compare_as_the_sets_they_stand_for(raw: list[list[tuple[int, int]]], data: st.DataObject) -> None:
    sets = [runs(SeqSet(tuple((start, start + width) for start, width in parts))) if parts else () for parts in raw]
    numbers = [{n for start, end in value for n in range(start, end + 1)} for value in sets]
    index = RunIndex(sets)
    for a, a_numbers in zip(sets, numbers, strict=True):
        assert index.meeting(a) == [i for i, b_numbers in enumerate(numbers) if a_numbers & b_numbers]
        b = data.draw(st.sampled_from(sets)) if sets else ()
        b_numbers = {n for start, end in b for n in range(start, end + 1)}
        assert overlaps(a, b) == bool(a_numbers & b_numbers)
        assert {n for start, end in minus(a, b) for n in range(start, end + 1)} == a_numbers - b_numbers
        assert minus(a, b) == runs(SeqSet(minus(a, b))) if minus(a, b) else True  # still sorted, disjoint runs
