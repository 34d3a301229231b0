"""Consolidation: buffer -> topics, history, and the no-loss guarantees."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from memd import Memory
from memd.consolidation.run import ConsolidationError, consolidate
from memd.engine.base import Block, Section, TopicUpdate
from memd.engine.offline import OfflineEngine
from memd.vault.journal import HandEditConflict
from memd.vault.vault import Vault

from .conftest import Memd, copy_example, snapshot

COFFEE = ["Takes coffee with oat milk", "Prefers a flat white coffee in the morning", "Drinks decaf coffee after 2pm"]
RUNNING = [
    "Runs the Lisbon half marathon in March",
    "Long marathon training run on Sundays",
    "Knee hurts after long runs",
]


def varied_notes(count: int, subjects: list[str] | None = None) -> list[str]:
    """Distinct notes on a few subjects (distinct, so none fold as duplicates)."""
    import random

    rng = random.Random(7)
    subjects = subjects or [
        "garden tomatoes basil",
        "chess openings tactics",
        "sailing knots harbour",
        "violin scales practice",
        "tax receipts accountant",
        "bicycle gears chain",
    ]
    vocabulary = (
        "morning evening weekend neighbour sister market river window kitchen station letter "
        "winter summer yellow quiet heavy careful early sudden patient"
    ).split()
    return [f"{subjects[i % len(subjects)]}: {' '.join(rng.sample(vocabulary, 6))} {i}" for i in range(count)]


def git_log(vault: Vault, fmt: str = "%s") -> list[str]:
    out = subprocess.run(["git", "-C", str(vault.root), "log", f"--format={fmt}"], capture_output=True, text=True)
    return out.stdout.splitlines()


def topic_entries(vault: Vault) -> dict[str, list[str]]:
    return {vault.doc_id(p): [e.entry.text for e in vault.read(p).signed()] for p in vault.topic_files()}


def test_consolidate_moves_the_buffer_into_topics_and_commits(memd: Memd) -> None:
    memd("add", "\n".join(COFFEE + RUNNING))
    result = memd("consolidate")
    assert "consolidate: 6 entries -> 2 topics (2 new)" in result.output
    topics = topic_entries(memd.vault)
    assert sorted(map(sorted, topics.values())) == [sorted(COFFEE), sorted(RUNNING)]
    current = memd.vault.read(memd.vault.current)
    assert current.entries() == [] and current.title() == "CURRENT"  # header prose stays
    assert git_log(memd.vault) == ["consolidate: 6 entries -> 2 topics (2 new)", "init: memd vault"]
    body = git_log(memd.vault, "%an <%ae>%n%b")
    assert body[0] == "memd <memd@localhost>"
    assert {"Memd-Seq: 1-6", "Memd-Engine: offline", "Memd-Trigger: manual"} <= set(body)
    history = json.loads(memd("log", "--json").output)
    assert history[0]["kind"] == "consolidate" and history[0]["trailers"]["Memd-Seq"] == "1-6"
    assert "ok: 6 live seqs" in memd("verify").output
    memd("lint")


def test_topics_get_frontmatter_with_summary_and_update_log(memd: Memd) -> None:
    memd("add", "\n".join(COFFEE))
    memd("consolidate")
    [path] = memd.vault.topic_files()
    data = memd.vault.read(path).frontmatter.data  # type: ignore[union-attr]
    assert list(data)[:5] == ["id", "summary", "created", "updated", "tokens"]
    assert data["id"] == path.stem and "coffee" in path.stem
    assert "coffee" in data["summary"]
    assert data["update_log"][0].endswith("consolidation 1: +3 entries")


def test_a_topic_logs_the_entries_one_run_filed_there_as_one_count(memd: Memd) -> None:
    notes = [
        f"Note {i}: the team met about the Atlas launch, Dana said the vendor contract renews in March"
        for i in range(8)
    ]
    memd("add", "\n".join(notes))
    memd("consolidate")
    [path] = memd.vault.topic_files()
    log = memd.vault.read(path).frontmatter.data["update_log"]  # type: ignore[union-attr]
    assert [line.split(" ", 1)[1] for line in log] == ["consolidation 1: +8 entries"]


def test_new_entries_join_the_matching_topic_and_section_and_hand_notes_are_adopted(memd: Memd) -> None:
    topic = memd.vault.topics_dir / "running.md"
    topic.write_text(
        '---\nid: "running"\nsummary: "half marathon training, knee"\nmine: keep me\n---\n'
        "# Training\nPlan written by hand, keep this prose.\n\n"
        "- <seq=1,source=user> Half marathon training plan: three runs a week\n"
        "- Long run every Sunday morning, unsigned\n\n"
        "# Cooking\n- <seq=2,source=user> Bakes sourdough bread\n"
    )
    subprocess.run(["git", "-C", str(memd.vault.root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(memd.vault.root), "commit", "-qm", "start"], check=True)
    memd("add", "Sunday long run for the half marathon went well, training on track")
    memd("consolidate")
    text = topic.read_text()
    assert "Plan written by hand, keep this prose." in text
    assert 'mine: "keep me"' in text or "mine: keep me" in text
    training = text.split("# Cooking")[0]
    assert "went well" in training
    assert "<seq=4," in text and "source=hand> Long run every Sunday morning, unsigned" in text
    assert "ok:" in memd("verify").output


def test_duplicates_fold_into_the_newest_with_all_seqs_and_sources(memd: Memd) -> None:
    memd("add", "--src", "chat-1#L3", "Takes coffee with oat milk")
    memd("add", "Bakes sourdough on weekends")
    memd("add", "--src", "chat-2#L9", "takes coffee with OAT milk!")
    memd("consolidate")
    signed = [e.entry.signature for p in memd.vault.topic_files() for e in memd.vault.read(p).signed()]
    folded = [s for s in signed if s is not None and len(s.seq) == 2]
    assert [str(s.seq) for s in folded] == ["1+3"]
    assert folded[0].src == "chat-1#L3;chat-2#L9"
    assert "ok: 3 live seqs" in memd("verify").output


def test_a_fold_keeps_when_it_was_first_said_and_every_time_it_was_said_again(memd: Memd) -> None:
    memd("add", "--time", "2026-11-01T09:00:00Z", "Swam 2 km in the lake")
    memd("add", "--time", "2026-11-03T09:00:00Z", "Swam 2 km in the lake")
    memd("add", "--time", "2026-11-05T09:00:00Z", "swam 2 km in the lake!")
    memd("consolidate")
    [signature] = [e.entry.signature for p in memd.vault.topic_files() for e in memd.vault.read(p).signed()]
    assert signature is not None and str(signature.seq) == "1-3"
    assert signature.time == "2026-11-01T09:00:00Z"
    assert signature.get("again") == "2026-11-03T09:00:00Z+2026-11-05T09:00:00Z"
    memd("add", "--time", "2026-11-07T09:00:00Z", "Swam 2 km in the lake")
    memd("consolidate")  # folded into the entry already filed: its dates are kept too
    [signature] = [e.entry.signature for p in memd.vault.topic_files() for e in memd.vault.read(p).signed()]
    assert signature is not None and str(signature.seq) == "1-4"
    assert signature.time == "2026-11-01T09:00:00Z"
    assert signature.get("again") == "2026-11-03T09:00:00Z+2026-11-05T09:00:00Z+2026-11-07T09:00:00Z"
    assert "ok:" in memd("verify").output


def test_a_newer_statement_supersedes_the_older_one_with_a_record(memd: Memd) -> None:
    memd("add", "Dana's phone number is 555-0101")
    memd("add", "Dana's phone number is 555-0199")
    memd("consolidate")
    texts = [t for texts in topic_entries(memd.vault).values() for t in texts]
    assert texts == ["Dana's phone number is 555-0199"]
    [path] = memd.vault.topic_files()
    log = memd.vault.read(path).frontmatter.data["update_log"]  # type: ignore[union-attr]
    assert any("seq 2 supersedes seq 1" in line for line in log)
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["superseded"] == 1


def test_dry_run_prints_the_plan_and_writes_nothing(memd: Memd) -> None:
    memd("add", "\n".join(COFFEE + RUNNING))
    before = snapshot(memd.vault)
    result = memd("consolidate", "--dry-run")
    assert result.output.startswith("plan: consolidate: 6 entries -> 2 topics (2 new)")
    assert "(new): 3 entries, seq 1-3" in result.output
    plan = json.loads(memd("consolidate", "--dry-run", "--json").output)
    assert plan["dry_run"] is True and plan["commit"] is None and len(plan["moves"]) == 6
    assert snapshot(memd.vault) == before
    assert git_log(memd.vault) == ["init: memd vault"]


def test_a_plan_lists_the_seqs_of_separate_entries_with_commas(memd: Memd) -> None:
    # "5+7" is how one entry that holds two seqs is written; three entries are three seqs.
    for text in ("Takes coffee with oat milk", "Passport expires in June 2027", "Drinks decaf coffee after 2pm"):
        memd("add", text)
    memd("add", "Coffee beans from the market on Saturday")
    result = memd("consolidate", "--dry-run")
    assert "3 entries, seq 1, 3-4" in result.output and "+" not in result.output


def test_if_due_waits_for_a_threshold_and_names_the_trigger(memd: Memd) -> None:
    memd.vault.config_path.write_text("[consolidate]\nbuffer_tokens = 12\n")
    memd("add", "Takes coffee with oat milk")
    assert "nothing to do: not due" in memd("consolidate", "--if-due").output
    memd("add", "\n".join(COFFEE[1:] + RUNNING))
    memd("consolidate", "--if-due")
    assert "Memd-Trigger: tokens" in git_log(memd.vault, "%b")


def test_hand_edits_are_committed_first_as_their_own_commit(memd: Memd) -> None:
    memd("add", "\n".join(COFFEE))
    memd("consolidate")
    [path] = memd.vault.topic_files()
    path.write_text(path.read_text().replace("oat milk", "soy milk"))
    memd("add", "Drinks coffee black when travelling")
    memd("consolidate")
    log = git_log(memd.vault, "%an|%s")
    assert log[1] == f"Test User|edit: topics/{path.name}"
    assert log[0].startswith("memd|consolidate: 1 entries")
    assert "soy milk" in path.read_text()


def test_a_step_that_loses_an_entry_is_refused_and_nothing_changes(memd: Memd) -> None:
    class Lossy(OfflineEngine):
        def update_topic(self, sections: list[Section], block: Block) -> TopicUpdate:
            update = super().update_topic(sections, block)
            _dropped, *rest = update.sections[-1].items
            return TopicUpdate((*update.sections[:-1], Section(update.sections[-1].title, tuple(rest))))

    memd("add", "\n".join(COFFEE))
    before = snapshot(memd.vault)
    with pytest.raises(ConsolidationError, match="seqs missing from every topic: 1"):
        consolidate(memd.vault, engine=Lossy())
    assert snapshot(memd.vault) == before


def test_a_hand_edit_during_consolidation_wins(memd: Memd) -> None:
    topic = memd.vault.topics_dir / "coffee.md"
    topic.write_text(  # memd's summary (it quotes the entry), so memd makes it again
        '---\nid: "coffee"\nsummary: "Takes coffee with oat milk"\n---\n'
        "# Coffee\n- <seq=1> Takes coffee with oat milk\n"
    )
    memd("add", "Takes a flat white coffee with oat milk in the morning")

    class EditsMeanwhile(OfflineEngine):
        def summarise(self, sections: list[Section]) -> str:
            topic.write_text(topic.read_text() + "- typed in an editor while memd ran\n")
            return super().summarise(sections)

    current_before = memd.vault.current.read_bytes()
    with pytest.raises(HandEditConflict, match=r"topics/coffee\.md was edited while memd was consolidating"):
        consolidate(memd.vault, engine=EditsMeanwhile())
    assert topic.read_text().endswith("- typed in an editor while memd ran\n")
    assert memd.vault.current.read_bytes() == current_before
    assert not (memd.vault.meta_dir / "journal" / "pending.json").exists()


def _subjects(vault: Vault) -> list[str]:
    log = subprocess.run(["git", "log", "--format=%s"], cwd=vault.root, capture_output=True, text=True, check=True)
    return log.stdout.splitlines()[::-1]


def test_after_a_save_made_it_start_over_consolidation_files_a_batch_at_a_time(memd: Memd) -> None:
    # A person saving every few seconds would make a long run start over for
    # ever: once one save did, the next part is one batch, done before their next save.
    memd.vault.config_path.write_text("[consolidate]\nbuffer_tokens = 200\n")
    memd("add", "\n".join(varied_notes(60)))

    class SavedOnce(OfflineEngine):
        saved = False

        def summarise(self, sections: list[Section]) -> str:
            if not SavedOnce.saved:
                SavedOnce.saved = True
                with memd.vault.current.open("a") as buffer:
                    buffer.write("- Typed in the buffer while memd ran\n")
            return super().summarise(sections)

    outcome = consolidate(memd.vault, engine=SavedOnce())
    assert outcome.filed == 61 and outcome.left == 0
    subjects = _subjects(memd.vault)
    parts = [s for s in subjects if s.startswith("consolidate:")]
    assert subjects[-1 - len(parts)] == "edit: CURRENT.md"  # the person's save, as theirs
    # One batch (200 tokens: 20 of these notes), then parts twice as big; one part when nobody edits (below).
    assert [int(s.split()[1]) for s in parts] == [20, 40, 1]
    assert "Typed in the buffer while memd ran" in "".join(p.read_text() for p in memd.vault.topic_files())
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_without_edits_the_same_buffer_is_one_part(memd: Memd) -> None:
    memd.vault.config_path.write_text("[consolidate]\nbuffer_tokens = 200\n")
    memd("add", "\n".join(varied_notes(60)))
    assert consolidate(memd.vault).filed == 60
    assert sum(s.startswith("consolidate:") for s in _subjects(memd.vault)) == 1


def test_parts_that_landed_stay_when_a_person_keeps_saving(memd: Memd) -> None:
    memd.vault.config_path.write_text("[consolidate]\nbuffer_tokens = 200\n")
    memd("add", "\n".join(varied_notes(60)))

    class SavesButOnce(OfflineEngine):
        """Saves the buffer during every attempt but the second."""

        attempts = 0

        def begin(self, label: str) -> None:
            SavesButOnce.attempts += 1
            super().begin(label)

        def summarise(self, sections: list[Section]) -> str:
            if SavesButOnce.attempts != 2:
                with memd.vault.current.open("a") as buffer:
                    buffer.write(f"- Typed during attempt {SavesButOnce.attempts}\n")
            return super().summarise(sections)

    outcome = consolidate(memd.vault, engine=SavesButOnce())
    # The second attempt filed one batch; the next part met a save three times and waits.
    assert SavesButOnce.attempts == 5 and outcome.filed == 20
    assert any(w.startswith("stopped after 20 of 61 buffer entries") for w in outcome.warnings), outcome.warnings
    assert "Typed during attempt 5" in memd.vault.current.read_text()
    assert json.loads(memd("verify", "--json").output)["ok"]
    assert memd("consolidate").exit_code == 0 and "Typed during attempt 5" not in memd.vault.current.read_text()


def test_a_consolidation_files_the_buffer_it_found_not_what_arrives_meanwhile(memd: Memd) -> None:
    memd.vault.config_path.write_text("[consolidate]\nbuffer_tokens = 200\n")
    memd("add", "\n".join(varied_notes(60)))
    memory = Memory.open(memd.vault.root)

    class BusyVault(OfflineEngine):
        """A person saves once, so parts are small; agents add notes faster than a part files them."""

        added = 0

        def summarise(self, sections: list[Section]) -> str:
            if BusyVault.added == 0:
                with memd.vault.current.open("a") as buffer:
                    buffer.write("- Typed in the buffer while memd ran\n")
            for _ in range(25 if BusyVault.added < 500 else 0):  # faster than a part files them; a bound
                BusyVault.added += 1
                memory.add(f"Arrived meanwhile {BusyVault.added}: the kettle, the porch light and the bins")
            return super().summarise(sections)

    outcome = consolidate(memd.vault, engine=BusyVault())
    # The buffer as the first part found it (notes the attempt that started over saw are in it).
    waiting = memd.vault.current.read_text().count("Arrived meanwhile")
    assert outcome.filed + waiting == 61 + BusyVault.added
    assert waiting > 0 and BusyVault.added < 500
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_two_consolidations_at_once_file_the_buffer_once_and_neither_fails(memd: Memd) -> None:
    for n in range(30):
        memd("add", f"Note {n} about the garden beds and tomatoes")

    class AnotherRunFinishesFirst(OfflineEngine):
        other_ran = False

        def summarise(self, sections: list[Section]) -> str:
            if not AnotherRunFinishesFirst.other_ran:  # a second `memd consolidate`, started at the same time
                AnotherRunFinishesFirst.other_ran = True
                assert consolidate(memd.vault, engine=OfflineEngine()).entries == 30
            return super().summarise(sections)

    # The stale run's proof found every seq twice and refused, as if the vault were damaged.
    outcome = consolidate(memd.vault, engine=AnotherRunFinishesFirst())
    assert AnotherRunFinishesFirst.other_ran and outcome.entries == 0
    assert json.loads(memd("verify", "--json").output)["ok"]
    assert not (memd.vault.meta_dir / "journal" / "refused").exists()


def test_a_topic_with_invalid_yaml_is_skipped_reported_and_never_rewritten(memd: Memd) -> None:
    broken = memd.vault.topics_dir / "coffee.md"
    broken.write_text("---\nid: coffee\nsummary: [oops\n---\n# Coffee\n- <seq=1> Takes coffee with oat milk\n")
    before = broken.read_bytes()
    memd("add", "\n".join(COFFEE[1:]))
    result = memd("consolidate")
    assert "warning: skipped topics/coffee.md: invalid YAML frontmatter" in result.output
    assert broken.read_bytes() == before
    assert len(memd.vault.topic_files()) == 2


def test_without_git_the_files_are_consolidated_and_committed_next_time(tmp_path: Path) -> None:
    from memd.app.init import init_vault

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # so init does not create one ...
    vault = init_vault(tmp_path / "v").vault
    subprocess.run(["rm", "-rf", str(tmp_path / ".git")], check=True)  # ... and then there is none
    memd = Memd(vault)
    memd("add", "\n".join(COFFEE))
    result = memd("consolidate")
    assert "warning: not committed: the vault is not in a git repository" in result.output
    assert len(vault.topic_files()) == 1 and vault.read(vault.current).entries() == []
    subprocess.run(["git", "init", "-q", str(vault.root)], check=True)
    memd("add", "\n".join(RUNNING))
    memd("consolidate")
    assert git_log(vault)[0].startswith("consolidate: 3 entries")
    tracked = subprocess.run(["git", "-C", str(vault.root), "ls-files"], capture_output=True, text=True).stdout
    assert len([line for line in tracked.splitlines() if line.startswith("topics/") and line.endswith(".md")]) == 2


def test_a_merge_in_progress_skips_the_commit_with_a_warning(memd: Memd) -> None:
    (memd.vault.root / ".git" / "MERGE_HEAD").write_text("0" * 40 + "\n")
    memd("add", "\n".join(COFFEE))
    result = memd("consolidate")
    assert "not committed: a merge is in progress" in result.output
    assert git_log(memd.vault) == ["init: memd vault"]


def test_entries_without_time_and_in_other_languages(memd: Memd) -> None:
    current = memd.vault.current
    current.write_text(
        current.read_text() + "- <seq=1> 東京の寿司屋が好き\n- <seq=2> 東京で寿司を食べた\n"
        "- <seq=3,source=user> Trinkt Kaffee mit Hafermilch\n"
    )
    memd("consolidate")
    assert "ok: 3 live seqs" in memd("verify").output
    for path in memd.vault.topic_files():
        # Safe file names everywhere, and Japanese stays Japanese (not "notes").
        assert path.stem.replace("-", "").isalnum() and path.stem == path.stem.lower()
    assert any("東京" in path.stem for path in memd.vault.topic_files())


@pytest.mark.slow
def test_a_big_buffer_is_consolidated_in_bounded_batches(memd: Memd) -> None:
    memd.vault.config_path.write_text("[consolidate]\nbuffer_tokens = 5000\nsplit_tokens = 5000\n")
    memd("add", "\n".join(varied_notes(5200)))
    outcome = consolidate(memd.vault)
    assert outcome.entries == 5200
    assert "ok: 5200 live seqs" in memd("verify").output
    sizes = [memd.vault.read(p).frontmatter.data["tokens"] for p in memd.vault.topic_files()]  # type: ignore[union-attr]
    assert sum(sizes) > 50_000 and max(sizes) <= 5000


GARDEN = {
    "Tomatoes": [
        "Tomato seedlings sprouted on the windowsill",
        "Tomatoes need staking once they pass knee height",
        "Cherry tomatoes ripen faster than beefsteak tomatoes",
        "Pinch tomato side shoots every week",
    ],
    "Basil": [
        "Basil hates cold nights below ten degrees",
        "Pinch basil flowers so the leaves stay sweet",
        "Thai basil grows slower than Genovese basil",
        "Basil cuttings root in a glass of water",
    ],
    "Watering": [
        "Water the garden beds early in the morning",
        "Drip irrigation saves water in July",
        "Rain barrel collects water from the shed roof",
        "Mulch keeps the soil from drying out",
    ],
}


def garden_topic(vault: Vault, sections: dict[str, list[str]]) -> Path:
    lines = ['---\nid: "garden"\nsummary: "garden tomatoes basil watering"\n---\n']
    seq = 100
    for title, notes in sections.items():
        lines.append(f"# {title}\n")
        for note in notes:
            lines.append(f"- <seq={seq},source=user> {note}\n")
            seq += 1
        lines.append("\n")
    path = vault.topics_dir / "garden.md"
    path.write_text("".join(lines))
    return path


def test_a_topic_over_the_split_threshold_splits_along_its_headings(memd: Memd) -> None:
    memd.vault.config_path.write_text("[consolidate]\nsplit_tokens = 80\nmerge_tokens = 10\n")
    garden_topic(memd.vault, GARDEN)
    memd("add", "Water the basil and tomato beds every evening in the heat")
    outcome = consolidate(memd.vault)
    [(source, parts)] = outcome.splits
    assert source == "garden" and len(parts) >= 1
    titles = {memd.vault.read(p).title() for p in memd.vault.topic_files()}
    assert {"Tomatoes", "Basil", "Watering"} <= titles
    assert all(memd.vault.read(p).frontmatter.data["tokens"] <= 80 for p in memd.vault.topic_files())  # type: ignore[union-attr]
    assert "ok: 13 live seqs" in memd("verify").output


def test_one_huge_section_is_split_by_meaning(memd: Memd) -> None:
    memd.vault.config_path.write_text("[consolidate]\nsplit_tokens = 60\nmerge_tokens = 10\n")
    garden_topic(memd.vault, {"Garden": [n for notes in GARDEN.values() for n in notes]})
    memd("add", "Garden tomatoes and basil both need watering every evening")
    outcome = consolidate(memd.vault)
    assert outcome.splits
    sizes = [memd.vault.read(p).frontmatter.data["tokens"] for p in memd.vault.topic_files()]  # type: ignore[union-attr]
    assert len(sizes) >= 2 and max(sizes) <= 60
    assert "ok: 13 live seqs" in memd("verify").output


def test_small_similar_topics_merge_and_keep_their_history(memd: Memd) -> None:
    topics = memd.vault.topics_dir
    (topics / "tea.md").write_text(
        '---\nid: "tea"\nsummary: "green tea"\nupdate_log:\n  - "2026-01-01T00:00:00Z consolidation 1: +1 entry, '
        'seq 99 supersedes seq 98 (old)"\n---\n# Tea\n- <seq=100> Drinks green tea daily\n'
    )
    (topics / "tea-2.md").write_text(
        '---\nid: "tea-2"\nsummary: "green tea jasmine"\n---\n# Jasmine tea\n- <seq=101> Green tea with jasmine\n'
        "Some prose about tea.\n"
    )
    memd("add", "Bought a green tea set with jasmine flowers")
    outcome = consolidate(memd.vault)
    [(survivor, absorbed)] = outcome.merges
    assert {survivor, absorbed} == {"tea", "tea-2"}
    assert not (topics / f"{absorbed}.md").exists()
    merged = (topics / f"{survivor}.md").read_text()
    assert "Some prose about tea." in merged and "Drinks green tea daily" in merged
    assert "seq 99 supersedes seq 98" in merged
    assert f"merged topic {absorbed}" in merged
    assert "ok:" in memd("verify").output


def test_verify_tells_a_hand_deletion_from_a_loss(memd: Memd) -> None:
    memd("add", "\n".join(COFFEE))
    memd("consolidate")
    [path] = memd.vault.topic_files()
    lines = [line for line in path.read_text().splitlines(True) if "oat milk" not in line]
    path.write_text("".join(lines))
    subprocess.run(["git", "-C", str(memd.vault.root), "commit", "-qam", "edit: remove a note"], check=True)
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["deleted_by_hand"] == 1
    path.write_text("".join(line for line in lines if "flat white" not in line))
    subprocess.run(
        ["git", "-C", str(memd.vault.root), "commit", "-qam", "consolidate: oops", "--author", "memd <memd@localhost>"],
        check=True,
    )
    result = memd("verify", ok=False)
    assert result.exit_code == 1 and "seqs 2 vanished in memd commit" in result.output


def test_verify_still_accounts_when_a_topic_has_invalid_frontmatter(memd: Memd) -> None:
    memd("add", "\n".join(COFFEE))
    memd("consolidate")
    [path] = memd.vault.topic_files()
    path.write_text(path.read_text().replace("summary:", "summary: [unclosed", 1))
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["live"] == 3


def test_the_example_vaults_buffer_goes_where_a_person_would_file_it(tmp_path: Path) -> None:
    root = tmp_path / "example"
    copy_example(root)
    outcome = consolidate(Vault(root), dry_run=True)
    # 35 (an Atlas demo) and 36 (vegan dinners in Kyoto) both name Dana and
    # follow each other, but were written a day apart: no shared sitting.
    assert {(m.seqs, m.topic) for m in outcome.moves} == {
        ("34", "running"),
        ("35", "work-atlas-project"),
        ("36", "travel"),
    }


ATLAS_LAUNCH = [
    "Atlas launch checklist: Dana reviews the invoice service rollback plan on Monday",
    "Dana says the Atlas launch needs a feature flag for the new tax rounding",
    "The Atlas launch dry run is booked for Thursday afternoon",
    "Priya wants a go/no-go meeting two days before the Atlas launch",
    "Load test for Atlas passed at 3x peak traffic after the index fix",
    "Marco asked for a finance sign-off slot the week of the Atlas launch",
    "Atlas launch comms: email customers 48 hours before cut-over",
    "Dana is on call for the first night after the Atlas launch",
    "We will freeze billing deploys from Dec 5 until the Atlas launch is done",
    "Atlas dashboards: invoice error rate, queue depth, p99 latency",
    "Rollback for Atlas takes about 40 minutes according to Dana",
    "The Atlas launch retro is planned for Dec 15",
]


def test_notes_on_a_project_join_its_topic(tmp_path: Path) -> None:

    from memd.app.memory import Memory

    root = tmp_path / "example"
    copy_example(root)
    memory = Memory.open(root)
    memory.add(ATLAS_LAUNCH)
    outcome = consolidate(Vault(root), dry_run=True)
    # By words, a buffer full of "Atlas" made the word weigh nothing: the notes
    # opened three topics of their own, and the dry run "on Thursday" went to running.
    filed = {m.seqs: m.topic for m in outcome.moves}
    launch = [topic for seqs, topic in filed.items() if int(seqs) > 36]
    assert launch == ["work-atlas-project"] * len(ATLAS_LAUNCH)


@pytest.mark.parametrize("grouping", ["words", "meaning"])
def test_notes_on_different_subjects_open_topics_of_their_own(
    memd: Memd, monkeypatch: pytest.MonkeyPatch, grouping: str
) -> None:
    # A lone note joins a topic only when close enough in meaning: notes on
    # five subjects in an empty vault do not all land in the first topic opened.
    # By words (the default) a lone note of no subject yet waits in the month's
    # notes rather than open a topic of its own.
    monkeypatch.setenv("MEMD_GROUPING", grouping)
    notes = [
        "The boiler makes a banging noise when the heating comes on",
        "Signed up for the Lisbon half marathon in March",
        "Car insurance renewal came in at 610, shop around",
        "Started Spanish lessons on Wednesdays at the library",
        "Dentist appointment on 3 October for a filling",
    ]
    for note in notes:
        memd("add", note)
    memd("consolidate")
    if grouping == "meaning":
        assert len(memd.vault.topic_files()) == len(notes)
    else:
        [month] = memd.vault.topic_files()
        assert month.stem.startswith("notes-") and all(note in month.read_text() for note in notes)
        assert "Car insurance" not in month.read_text().split("\n---\n", 1)[1].splitlines()[0]  # titled by month
    assert "ok: 5 live seqs" in memd("verify").output


def test_notes_in_a_language_the_model_cannot_read_go_by_words(memd: Memd) -> None:
    # MiniLM reads English: Japanese and German notes come out close to each
    # other whatever they say, so they are not grouped by meaning.
    for note in ["東京の寿司屋が好き", "東京で寿司を食べた", "Trinkt Kaffee mit Hafermilch"]:
        memd("add", note)
    memd("consolidate")
    topics = {path.stem: path.read_text() for path in memd.vault.topic_files()}
    assert len(topics) == 2
    assert [stem for stem, text in topics.items() if "Hafermilch" in text and "東京" not in text]


def test_verify_resumes_from_its_checkpoint_and_full_walks_everything(memd: Memd) -> None:
    for note in COFFEE:
        memd("add", note)
        memd("consolidate")
    first = json.loads(memd("verify", "--json").output)
    memd("add", "Drinks green tea in the afternoon")
    memd("consolidate")
    again = json.loads(memd("verify", "--json").output)
    assert again["ok"] and again["commits_checked"] == first["commits_checked"] + 1
    full = json.loads(memd("verify", "--full", "--json").output)
    assert full == again
    # A checkpoint from another history (a rewritten branch) is not trusted.
    checkpoint = memd.vault.meta_dir / "verify.json"
    saved = json.loads(checkpoint.read_text())
    checkpoint.write_text(json.dumps({**saved, "head": "0" * 40}))
    assert json.loads(memd("verify", "--json").output) == full
    # A lost seq in an old commit is still found after a resumed walk.
    [path] = [p for p in memd.vault.topic_files() if "flat white" in p.read_text()]
    path.write_text("".join(line for line in path.read_text().splitlines(True) if "flat white" not in line))
    subprocess.run(
        ["git", "-C", str(memd.vault.root), "commit", "-qam", "consolidate: oops", "--author", "memd <memd@localhost>"],
        check=True,
    )
    assert "vanished in memd commit" in memd("verify", ok=False).output


def test_a_line_typed_into_a_topic_no_entry_goes_to_is_signed_and_no_seq_is_skipped(memd: Memd) -> None:
    garden = memd.vault.topics_dir / "garden.md"
    garden.write_text('---\nid: "garden"\nsummary: "garden"\n---\n# Garden\n- Tomatoes need staking in June\n')
    for text in ("Bought a new road bike", "Dentist appointment on Friday"):
        memd("add", text)
        memd("consolidate")
    assert "- <seq=2,time=" in garden.read_text() and "source=hand> Tomatoes need staking in June" in garden.read_text()
    assert "signed 1 unsigned item" in garden.read_text()
    # Seqs were reserved for the typed line once, and used: the next seq follows the last one given.
    assert json.loads(memd("status", "--json").output)["next_seq"] == 4
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_notes_on_a_new_project_are_named_after_it(memd: Memd) -> None:
    # "Atlas" is in every note: word weights taken over the notes count it for
    # nothing, so by words alone the topic was "Launch and Dana".
    for note in ATLAS_LAUNCH:
        memd("add", note)
    memd("consolidate")
    [topic] = memd.vault.topic_files()
    assert topic.stem.startswith("atlas") and memd.vault.read(topic).title().startswith("Atlas")


def test_a_note_headed_by_a_label_is_no_speakers_turn(memd: Memd) -> None:
    # "TODO:" says what kind of note it is: a topic called "todo", tagged as
    # a person, would gather every to-do whatever it is about.
    for note in [
        "TODO: renew the car insurance before Friday",
        "Idea: a weekly review every Sunday evening",
        "TODO: book the MOT for the car",
        "Reminder: call Mum on her birthday",
    ]:
        memd("add", note)
    memd("consolidate")
    stems = {path.stem for path in memd.vault.topic_files()}
    assert not stems & {"todo", "idea", "reminder"}
    [car] = [path for path in memd.vault.topic_files() if "insurance" in path.read_text()]
    assert "MOT" in car.read_text() and "todo" not in memd.vault.read(car).frontmatter.data.get("tags", [])  # type: ignore[union-attr]


class Paraphrases(OfflineEngine):
    """A model's summaries: its own words, quoting no entry."""

    made = 0

    def summarise(self, sections: list[Section]) -> str:
        Paraphrases.made += 1
        return f"How coffee is taken (summary {Paraphrases.made})"


def test_a_summary_a_person_wrote_stays_and_memds_own_is_made_again(memd: Memd) -> None:
    memd("add", "Takes coffee black with no sugar")
    consolidate(memd.vault, engine=Paraphrases())
    [topic] = memd.vault.topic_files()

    def summary() -> str:
        return str(memd.vault.read(topic).frontmatter.data["summary"])  # type: ignore[union-attr]

    assert summary() == "How coffee is taken (summary 1)"
    # The catalog is this machine's and may go (a new clone has none): history says the summary is memd's.
    (memd.vault.index_dir / "catalog.sqlite").unlink()
    memd("add", "Coffee after three in the afternoon is decaf")
    consolidate(memd.vault, engine=Paraphrases())
    assert "Coffee after three" in topic.read_text()
    assert summary() == "How coffee is taken (summary 2)"

    topic.write_text(topic.read_text().replace("How coffee is taken (summary 2)", "My coffee rules, by hand"))
    memd("add", "Coffee with oat milk on weekends")
    consolidate(memd.vault, engine=Paraphrases())
    assert "oat milk" in topic.read_text()
    assert summary() == "My coffee rules, by hand"
    (memd.vault.index_dir / "catalog.sqlite").unlink()
    memd("add", "Coffee beans from the market on Saturday")
    consolidate(memd.vault, engine=Paraphrases())
    assert "Coffee beans" in topic.read_text() and summary() == "My coffee rules, by hand"

    # Emptied, the summary is memd's to write again, however YAML writes empty.
    for empty in ('""', "", "null", "~"):
        topic.write_text(re.sub(r"(?m)^summary:.*$", f"summary: {empty}".rstrip(), topic.read_text()))
        memd("add", f"Coffee grinder set to medium fine ({empty or 'blank'})")
        consolidate(memd.vault, engine=Paraphrases())
        assert summary().startswith("How coffee is taken"), empty
    assert "ok:" in memd("verify").output


def test_a_topic_renamed_by_hand_keeps_memds_summary_memds(memd: Memd) -> None:
    memd("add", "Takes coffee black with no sugar")
    consolidate(memd.vault, engine=Paraphrases())
    [topic] = memd.vault.topic_files()
    renamed = topic.with_name("my-coffee.md")
    topic.rename(renamed)
    git = ["git", "-C", str(memd.vault.root)]
    subprocess.run([*git, "add", "-A"], check=True)  # committed as the person's, as the daemon does
    subprocess.run([*git, "commit", "-qm", "rename by hand"], check=True)
    first = memd.vault.read(renamed).frontmatter.data["summary"]  # type: ignore[union-attr]
    memd("add", "Coffee after three in the afternoon is decaf")
    consolidate(memd.vault, engine=Paraphrases())
    assert memd.vault.read(renamed).frontmatter.data["summary"] != first  # type: ignore[union-attr]
