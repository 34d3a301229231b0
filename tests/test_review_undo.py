"""`memd undo`: revert one consolidation as a new commit, losing nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memd.vault.vault import Vault

from .conftest import REPO, Memd
from .review_story import BREAD, COFFEE, NEW_CAR, NEW_PHONE, OLD_CAR, OLD_PHONE, Story, build, git


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return build(tmp_path_factory.mktemp("story") / "vault")


@pytest.fixture
def memd(story: Story, tmp_path: Path) -> Memd:
    return Memd(story.copy(tmp_path / "vault"))


def buffer(vault: Vault) -> dict[str, str]:
    """seq -> text of the entries in CURRENT.md."""
    return {str(e.entry.signature.seq): e.entry.full_text for e in vault.read(vault.current).signed()}  # type: ignore[union-attr]


def tree(vault: Vault, rev: str) -> dict[str, str]:
    names = git(vault.root, "ls-tree", "-r", "--name-only", rev, "--", "topics").split()
    return {name: git(vault.root, "show", f"{rev}:{name}") for name in names if name.endswith(".md")}


def files(vault: Vault) -> dict[str, str]:
    return {vault.rel(p): p.read_text() for p in vault.topic_files()}


def verify(memd: Memd) -> dict:  # type: ignore[type-arg]
    return json.loads(memd("verify", "--json").output)


def test_undo_puts_the_buffer_back_and_the_topics_as_they_were(memd: Memd, story: Story) -> None:
    vault = memd.vault
    memd("add", "Plans a trip to Kyoto in April")  # written after the consolidation: stays, after the restored one
    data = json.loads(memd("undo", "--json").output)
    assert data["undone"]["sha"] == story.commits["C6"] and data["consolidation"] == "6"
    assert [r["text"] for r in data["restored"]] == [BREAD]
    assert list(buffer(vault).values()) == [BREAD, "Plans a trip to Kyoto in April"]
    assert files(vault) == tree(vault, story.commits["C5"])
    assert (
        git(vault.root, "log", "-1", "--format=%an|%s") == f"memd|undo: consolidation 6 ({story.commits['C6'][:7]})\n"
    )
    assert f"Memd-Undo: {story.commits['C6']}" in git(vault.root, "log", "-1", "--format=%B")
    report = verify(memd)
    assert report["ok"] and report["problems"] == []
    memd("lint")
    # The next consolidation files it again.
    memd("consolidate")
    assert BREAD in "".join(files(vault).values()) and verify(memd)["ok"]
    kinds = [s["kind"] for s in json.loads(memd("history", str(story.seqs[BREAD]), "--json").output)["steps"]]
    assert kinds == ["added", "filed", "restored", "filed"]


def test_undo_of_a_supersession_brings_back_the_old_fact_and_both_buffer_entries(memd: Memd, story: Story) -> None:
    vault = memd.vault
    before = files(vault)
    text = memd("undo", story.commits["C2"]).output
    assert text.startswith(f"undid consolidation 2 ({story.commits['C2'][:7]}")
    s = story.seqs
    assert buffer(vault) == {str(s[NEW_PHONE]): NEW_PHONE, str(s[OLD_CAR]): OLD_CAR, str(s[NEW_CAR]): NEW_CAR}
    signatures = vault.current.read_text()
    assert "supersedes=" not in signatures, "the supersession is undone with the consolidation"
    assert f"<seq={s[OLD_CAR]},time=2026-09-10T10:00:00Z,source=user> {OLD_CAR}" in signatures
    # The old number waited in the month's notes until Dana's notes became a topic (C2): both go back.
    [dana] = [p for p, t in tree(vault, story.commits["C1"]).items() if OLD_PHONE in t and p.startswith("topics/")]
    assert files(vault)[dana] == tree(vault, story.commits["C1"])[dana]
    assert OLD_PHONE in files(vault)[dana]
    gathered = [p for p in before if p.startswith("topics/dana")]
    assert gathered and not any(p in files(vault) for p in gathered)
    changed = {dana, *gathered}
    assert {p: t for p, t in files(vault).items() if p not in changed} == {
        p: t for p, t in before.items() if p not in changed
    }
    assert verify(memd)["ok"]
    old = json.loads(memd("history", str(s[OLD_PHONE]), "--json").output)
    assert [step["kind"] for step in old["steps"]] == ["added", "filed", "superseded", "restored"]
    assert old["steps"][-1]["commit"] == git(vault.root, "rev-parse", "HEAD").strip()
    assert old["now"][0]["path"] == dana and old["now"][0]["text"] == OLD_PHONE
    memd("consolidate")  # the same buffer, consolidated again, supersedes again
    assert verify(memd)["ok"] and OLD_PHONE not in "".join(files(vault).values())


def test_undo_is_refused_when_a_later_commit_changed_the_same_topics(memd: Memd, story: Story) -> None:
    vault = memd.vault
    before = (files(vault), vault.current.read_text(), git(vault.root, "rev-parse", "HEAD"))
    result = memd("undo", story.commits["C1"], ok=False)
    assert result.exit_code == 1
    line = result.output.strip()
    assert line.startswith(f"memd: cannot undo consolidation 1 ({story.commits['C1'][:7]}): later commits changed")
    assert f"{story.commits['E'][:7]} edit: topics/coffee.md (Test User, 2026-09-15)" in line
    assert f"{story.commits['C2'][:7]} consolidate" in line  # C2 changed Dana's topic too
    assert (files(vault), vault.current.read_text(), git(vault.root, "rev-parse", "HEAD")) == before


def test_hand_edits_are_never_undone(memd: Memd, story: Story) -> None:
    result = memd("undo", story.commits["E"], ok=False)
    assert result.exit_code == 1 and "is not a consolidation" in result.output and "never undone" in result.output
    # An uncommitted hand edit is committed first and then stands in the way.
    [bread] = [p for p in memd.vault.topic_files() if BREAD in p.read_text()]
    bread.write_text(bread.read_text().replace("sourdough", "rye"))
    result = memd("undo", ok=False)
    assert result.exit_code == 1 and "edit: topics/" in result.output
    assert "rye" in bread.read_text()
    assert git(memd.vault.root, "log", "-1", "--format=%an") == "Test User\n"


def test_an_undone_consolidation_is_not_undone_twice_and_dry_run_changes_nothing(memd: Memd, story: Story) -> None:
    vault = memd.vault
    head = git(vault.root, "rev-parse", "HEAD")
    plan = json.loads(memd("undo", "--dry-run", "--json").output)
    assert plan["dry_run"] and plan["commit"] is None and [r["text"] for r in plan["restored"]] == [BREAD]
    assert git(vault.root, "rev-parse", "HEAD") == head and BREAD not in vault.current.read_text()
    memd("undo")
    result = memd("undo", story.commits["C6"], ok=False)
    assert result.exit_code == 1 and "already undone" in result.output
    # The default moves on to the previous consolidation.
    data = json.loads(memd("undo", "--dry-run", "--json").output)
    assert data["undone"]["sha"] == story.commits["C5"]


def test_undo_withdraws_the_seqs_it_gave_hand_written_items_and_verify_stays_clean(memd: Memd) -> None:
    vault = memd.vault
    [coffee] = [p for p in vault.topic_files() if "coffee" in p.name]
    coffee.write_text(coffee.read_text() + "- Grinds the beans fresh every morning\n")
    git(vault.root, "commit", "-qam", "edit: a coffee note")
    memd("add", "Coffee beans come from the market on Fridays")
    outcome = json.loads(memd("consolidate", "--json").output)
    assert "source=hand> Grinds the beans" in coffee.read_text(), "the hand-written note was adopted"
    data = json.loads(memd("undo", "--json").output)
    assert data["undone"]["sha"] == outcome["commit"] and data["withdrawn"]
    assert "- Grinds the beans fresh every morning\n" in coffee.read_text()
    assert "Coffee beans come from the market on Fridays" in buffer(vault).values()
    report = verify(memd)
    assert report["ok"], report["problems"]


def test_an_interrupted_undo_is_finished_by_the_next_command(memd: Memd, story: Story) -> None:
    vault = memd.vault
    env = {**os.environ, "MEMD_CRASH_AT": "3", "PYTHONPATH": str(REPO)}  # after the journal and the first file
    crashed = subprocess.run(
        [sys.executable, "-m", "memd", "--vault", str(vault.root), "undo"], env=env, capture_output=True, text=True
    )
    assert crashed.returncode != 0 and (vault.root / ".memd" / "journal" / "pending.json").exists()
    assert "completed an interrupted" in memd("status").output  # any command finishes it
    assert not (vault.root / ".memd" / "journal" / "pending.json").exists()
    assert git(vault.root, "log", "-1", "--format=%s").startswith("undo: consolidation 6")
    assert list(buffer(vault).values()) == [BREAD] and verify(memd)["ok"]
    assert COFFEE[1] in "".join(files(vault).values())


def test_words_a_consolidation_did_not_record_are_reported_not_invented(memd: Memd) -> None:
    vault = memd.vault
    memd("add", "Dana's bike is a green Brompton")
    memd("add", "Dana's bike is a black Bianchi")
    memd("consolidate")
    message = git(vault.root, "log", "-1", "--format=%B")
    assert "    - <seq=" in message  # the replaced entry, recorded
    older = "\n".join(line for line in message.splitlines() if not line.startswith("    "))
    git(vault.root, "commit", "-q", "--amend", "-m", older)  # as consolidations made before words were recorded
    (vault.meta_dir / "acks.jsonl").unlink()  # ... and long enough ago that memd no longer guards their entries
    result = memd("undo")
    assert "could not be restored" in result.output and "black Bianchi" in vault.current.read_text()
    assert "green Brompton" not in vault.current.read_text()
    assert verify(memd)["ok"]


def test_a_supersedes_mark_the_entry_came_with_goes_back_with_it(memd: Memd) -> None:
    # Undo takes back the supersessions the consolidation found; one the person gave
    # (--meta supersedes=N) is theirs, and consolidating again must retire the old fact again.
    vault = memd.vault
    memd("add", "Dana lives in Berlin")
    memd("consolidate")
    [old] = [seq for seq, said in _live(vault).items() if said == "Dana lives in Berlin"]
    memd("add", "--meta", f"supersedes={old}", "Dana moved to Paris")
    memd("consolidate")
    memd("undo")
    [restored] = [line for line in vault.current.read_text().splitlines() if "Dana moved to Paris" in line]
    assert f",supersedes={old}>" in restored
    memd("consolidate")
    assert "Dana lives in Berlin" not in _live(vault).values() and "Dana moved to Paris" in _live(vault).values()
    report = verify(memd)
    assert report["ok"], report["problems"]


def _live(vault: Vault) -> dict[str, str]:
    return {
        str(e.entry.signature.seq): e.entry.text  # type: ignore[union-attr]
        for path in [vault.current, *vault.topic_files()]
        for e in vault.read(path).signed()
    }


def test_undo_twice_goes_back_two_consolidations_of_the_same_topic(memd: Memd) -> None:
    # The second undo's topic was changed after its consolidation, by the consolidation the
    # first undo took back: the two cancel out, so nothing later stands in the way.
    vault = memd.vault
    head = git(vault.root, "rev-parse", "HEAD").strip()
    memd("add", "Dana's bike is a green Brompton")
    memd("consolidate")
    memd("add", "Dana rides the green Brompton to work")
    memd("consolidate")
    memd("undo")
    memd("undo")
    assert files(vault) == tree(vault, head)
    said = sorted(buffer(vault).values())
    assert said == ["Dana rides the green Brompton to work", "Dana's bike is a green Brompton"]
    report = verify(memd)
    assert report["ok"], report["problems"]
    # A later change that does not cancel out still stands in the way.
    memd("consolidate")
    [topic] = [p for p in vault.topic_files() if "Brompton" in p.read_text()]
    memd("add", "Dana sold the Brompton")
    memd("consolidate")
    topic.write_text(topic.read_text() + "\nA note by hand.\n")
    first = memd("undo", ok=False)
    assert "later commits changed the same topics" in first.output and "edit: " in first.output
