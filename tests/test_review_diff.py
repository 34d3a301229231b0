"""`memd diff`: a consolidation (or any range of commits) in memory terms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    assert data["summary"] == {"filed": 2, "superseded": 2} and data["topics"] == []
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


def test_bad_revisions_are_one_line_errors(memd: Memd) -> None:
    for args in (["nosuchrev"], ["HEAD..nosuch"], ["--", "-x"]):
        result = memd("diff", *args, ok=False)
        assert result.exit_code != 0 and "Traceback" not in result.output
    result = memd("diff", "nosuchrev", ok=False)
    assert result.output.strip() == "Error: no commit 'nosuchrev' in the vault's history (try `memd log`)"


def test_a_fresh_vault_has_nothing_to_diff(vault) -> None:  # type: ignore[no-untyped-def]
    result = Memd(vault)("diff", ok=False)
    assert result.exit_code == 1 and "no consolidation yet" in result.output
