"""`memd history`: the life of one memory, step by step, from git history."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memd.app.init import init_vault
from memd.core.signature import SeqSet
from memd.vault.vault import Vault

from .conftest import Memd
from .review_story import BREAD, COFFEE, NEW_CAR, NEW_PHONE, OLD_CAR, OLD_PHONE, Story, build, git, when


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return build(tmp_path_factory.mktemp("story") / "vault")


@pytest.fixture
def memd(story: Story, tmp_path: Path) -> Memd:
    return Memd(story.copy(tmp_path / "vault"))


def life(memd: Memd, target: str) -> dict:  # type: ignore[type-arg]
    return json.loads(memd("history", target, "--json").output)


def steps(data: dict) -> list[tuple[str, str | None]]:  # type: ignore[type-arg]
    return [(step["kind"], step["commit"]) for step in data["steps"]]


def test_a_superseded_fact_shows_when_it_came_what_replaced_it_and_the_old_words(memd: Memd, story: Story) -> None:
    old, new = story.seqs[OLD_PHONE], story.seqs[NEW_PHONE]
    data = life(memd, str(old))
    assert steps(data) == [("added", None), ("filed", story.commits["C1"]), ("superseded", story.commits["C2"])]
    added, filed, superseded = data["steps"]
    assert added["date"].startswith("2026-09-01") and added["entry"]["text"] == OLD_PHONE
    assert filed["date"].startswith("2026-09-01T10:00:00")
    assert filed["author"] == "memd" and not filed["by_hand"]
    assert filed["entry"]["text"] == OLD_PHONE
    assert filed["cite"] == f"{filed['entry']['path']}:{filed['entry']['line']}@{story.commits['C1'][:7]}"
    assert superseded["entry"] is None and superseded["before"]["text"] == OLD_PHONE
    assert superseded["superseded_by"]["seq"] == str(new)
    assert superseded["superseded_by"]["entry"]["text"] == NEW_PHONE
    assert superseded["date"].startswith("2026-09-10")
    assert data["now"] == []
    text = memd("history", str(old)).output
    assert "superseded" in text and NEW_PHONE in text and OLD_PHONE in text and story.commits["C2"][:7] in text


def test_the_superseding_entry_says_what_it_replaced_in_the_file(memd: Memd, story: Story) -> None:
    old, new = story.seqs[OLD_PHONE], story.seqs[NEW_PHONE]
    [topic] = [p for p in memd.vault.topic_files() if NEW_PHONE in p.read_text()]
    line = next(line for line in topic.read_text().splitlines() if line.startswith("- ") and NEW_PHONE in line)
    assert f"<seq={new}," in line and f",supersedes={old}>" in line
    memd("lint")
    data = life(memd, str(new))
    assert [s["kind"] for s in data["steps"]] == ["added", "filed"]
    assert data["now"][0]["signature"].endswith(f"supersedes={old}>")


def test_an_entry_superseded_in_the_buffer_keeps_its_words_in_the_history(memd: Memd, story: Story) -> None:
    old, new = story.seqs[OLD_CAR], story.seqs[NEW_CAR]
    assert OLD_CAR not in "".join(p.read_text() for p in memd.vault.topic_files())
    data = life(memd, str(old))
    assert steps(data) == [("added", None), ("superseded", story.commits["C2"])]
    added, superseded = data["steps"]
    assert added["entry"]["text"] == OLD_CAR and added["entry"]["cite"] is None
    assert added["date"].startswith("2026-09-10")
    assert superseded["before"]["text"] == OLD_CAR
    assert (
        superseded["superseded_by"]
        == {
            "seq": str(new),
            "entry": superseded["superseded_by"]["entry"],
        }
        and superseded["superseded_by"]["entry"]["text"] == NEW_CAR
    )


def test_a_hand_edit_is_a_step_by_the_person(memd: Memd, story: Story) -> None:
    seq = story.seqs[COFFEE[0]]
    data = life(memd, str(seq))
    assert steps(data) == [("added", None), ("filed", story.commits["C1"]), ("edited", story.commits["E"])]
    edited = data["steps"][-1]
    assert edited["author"] == "Test User" and edited["by_hand"]
    assert edited["before"]["text"] == "Takes coffee with oat milk"
    assert edited["entry"]["text"] == "Takes coffee with soy milk"
    assert edited["date"].startswith("2026-09-15")
    assert data["now"][0]["text"] == "Takes coffee with soy milk"


def test_a_split_and_a_merge_move_entries_between_topics(memd: Memd, story: Story) -> None:
    [(split_topic, parts)] = story.outcomes["C4"].splits
    [(survivor, absorbed)] = story.outcomes["C5"].merges
    moved = [
        seq
        for seq in range(1, 20)
        if _topic_of(memd.vault, story.commits["C3"], seq) == split_topic
        and _topic_of(memd.vault, story.commits["C4"], seq) in parts
    ]
    assert moved, "the split moved entries filed before it"
    data = life(memd, str(moved[0]))
    assert steps(data) == [("added", None), ("filed", story.commits["C3"]), ("moved", story.commits["C4"])] + (
        [("moved", story.commits["C5"])] if _topic_of(memd.vault, story.commits["C4"], moved[0]) == absorbed else []
    )
    move = data["steps"][2]
    assert move["before"]["path"] == f"topics/{split_topic}.md"
    assert move["entry"]["path"] in {f"topics/{p}.md" for p in parts}
    assert f"topic {split_topic} was split" in move["detail"]

    merged = [s for s in range(1, 20) if _topic_of(memd.vault, story.commits["C4"], s) == absorbed]
    assert merged, "the merge moved entries"
    data = life(memd, str(merged[0]))
    move = data["steps"][-1]
    assert (move["kind"], move["commit"]) == ("moved", story.commits["C5"])
    assert move["before"]["path"] == f"topics/{absorbed}.md" and move["entry"]["path"] == f"topics/{survivor}.md"
    assert f"merged into {survivor}" in move["detail"]
    assert data["now"][0]["path"] == f"topics/{survivor}.md"


def test_words_pick_the_best_matching_entry(memd: Memd, story: Story) -> None:
    data = life(memd, "Dana phone number")
    assert data["query"] == "Dana phone number"
    assert data["matched"]["text"] == NEW_PHONE and data["seq"] == str(story.seqs[NEW_PHONE])
    assert "best match for 'Dana phone number'" in memd("history", "Dana phone number").output


def test_an_entry_still_in_the_buffer_and_a_seq_given_as_seq_n(memd: Memd) -> None:
    added = json.loads(memd("add", "Plans a trip to Kyoto in April", "--json").output)[0]
    data = life(memd, f"seq {added['seq']}")
    [step] = data["steps"]
    assert step["kind"] == "added" and step["commit"] is None and "not consolidated" in step["detail"]
    assert data["now"][0]["path"] == "CURRENT.md"


def test_a_deletion_by_hand_and_an_uncommitted_edit(memd: Memd, story: Story) -> None:
    seq = story.seqs[BREAD]
    [path] = [p for p in memd.vault.topic_files() if BREAD in p.read_text()]
    path.write_text(path.read_text().replace("sourdough bread", "rye bread"))
    data = life(memd, str(seq))
    assert data["steps"][-1]["kind"] == "edited" and data["steps"][-1]["commit"] is None
    path.write_text("".join(line for line in path.read_text().splitlines(True) if "rye bread" not in line))
    git(memd.vault.root, "commit", "-qam", "edit: drop the bread note")
    data = life(memd, str(seq))
    last = data["steps"][-1]
    assert last["kind"] == "removed" and last["by_hand"] and last["detail"] == "deleted by hand"
    assert last["before"]["text"] == BREAD and data["now"] == []


def test_unknown_seqs_and_bad_targets_are_one_line_errors(memd: Memd, vault_without_git: Vault) -> None:
    result = memd("history", "999", ok=False)
    assert (
        result.exit_code == 1
        and result.output.strip() == "memd: seq 999 never appeared in this vault's files or history"
    )
    result = memd("history", "12-3", ok=False)
    assert result.exit_code == 1 and "invalid seq range" in result.output and "Traceback" not in result.output
    result = Memd(vault_without_git)("history", "1", ok=False)
    assert result.exit_code == 1 and "not in a git repository" in result.output


def test_history_reads_only_the_commits_that_touched_the_entry(memd: Memd, story: Story) -> None:
    # 17 seqs, 10 commits: following seq 1 opens the two commits where its line changed.
    data = life(memd, str(story.seqs[COFFEE[1]]))
    assert data["commits_read"] == 1 and [s["kind"] for s in data["steps"]] == ["added", "filed"]


def test_a_vault_inside_a_larger_repository(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    (tmp_path / "repo" / "README.md").write_text("other project\n")
    vault = init_vault(tmp_path / "repo" / "notes" / "memory").vault
    memd = Memd(vault)
    memd("add", OLD_PHONE)
    memd("consolidate")
    memd("add", NEW_PHONE)
    memd("consolidate")
    data = life(memd, "1")
    assert [s["kind"] for s in data["steps"]] == ["added", "filed", "superseded"]
    assert data["steps"][1]["entry"]["path"].startswith("topics/")
    hits = json.loads(memd("search", "phone", "--as-of", "HEAD~1", "--json").output)
    assert hits[0]["text"] == OLD_PHONE and "@" in hits[0]["cite"]
    changes = json.loads(memd("diff", "--json").output)
    assert {(c["kind"], c["seq"]) for c in changes["entries"]} == {("filed", "2"), ("superseded", "1")}
    # A second vault in the same repository, with the same seqs, lives its own life.
    other = Memd(init_vault(tmp_path / "repo" / "notes" / "work").vault)
    other("add", "Standup moves to 9:30 on Mondays")
    other("consolidate")
    mine = life(other, "1")
    assert [s["kind"] for s in mine["steps"]] == ["added", "filed"]
    assert mine["steps"][1]["entry"]["text"] == "Standup moves to 9:30 on Mondays"
    assert [s["kind"] for s in life(memd, "1")["steps"]] == ["added", "filed", "superseded"]
    assert json.loads(other("undo", "--dry-run", "--json").output)["restored"][0]["seq"] == "1"


def test_a_seq_inside_a_merged_range_is_found(memd: Memd) -> None:
    for copy in ("Allergic to peanuts", "allergic to PEANUTS!", "Allergic to peanuts."):
        memd("add", copy)
    memd("consolidate")
    lines = (line for p in memd.vault.topic_files() for line in p.read_text().splitlines())
    [line] = [line for line in lines if line.startswith("- <seq=") and "eanut" in line]
    value = line.split("<seq=", 1)[1].split(",", 1)[0]
    assert value == "18-20"  # three copies fold into one entry holding a range
    for seq in SeqSet.parse(value):
        data = life(memd, str(seq))
        assert data["steps"][-1]["kind"] == "filed" and data["steps"][-1]["entry"]["seq"] == value


@pytest.fixture
def vault_without_git(tmp_path: Path) -> Vault:
    root = tmp_path / "plain"
    vault = init_vault(root).vault
    subprocess.run(["rm", "-rf", str(root / ".git")], check=True)
    return vault


def _topic_of(vault: Vault, commit: str, seq: int) -> str | None:
    found = subprocess.run(
        ["git", "-C", str(vault.root), "grep", "-l", "-E", f"<seq={seq}[,>]", commit, "--", "topics"],
        capture_output=True,
        text=True,
    )
    listing = found.stdout
    paths = [line.split(":", 1)[1] for line in listing.splitlines()]
    return Path(paths[0]).stem if paths else None


def test_dates_are_the_commit_dates(memd: Memd, story: Story) -> None:
    data = life(memd, str(story.seqs[NEW_PHONE]))
    assert data["steps"][1]["date"].startswith(when("09-10")[:10])


def test_a_move_to_another_section_by_hand(memd: Memd, story: Story) -> None:
    seq = story.seqs[COFFEE[2]]
    [coffee] = [p for p in memd.vault.topic_files() if "coffee" in p.name]
    lines = coffee.read_text().splitlines(True)
    [entry] = [line for line in lines if line.startswith(f"- <seq={seq},")]
    lines.remove(entry)
    coffee.write_text("".join(lines) + "\n# Afternoon\n" + entry)
    git(memd.vault.root, "commit", "-qam", "edit: afternoon section")
    data = life(memd, str(seq))
    moved = data["steps"][-1]
    assert (moved["kind"], moved["by_hand"]) == ("moved", True)
    assert moved["detail"] == "moved from section 'Coffee' to 'Afternoon'"
    assert moved["entry"]["section"] == "Afternoon" and moved["before"]["section"] == "Coffee"
