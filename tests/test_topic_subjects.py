"""Topics a person would have written: one subject a topic, named by it, and a
person's own names never taken away by memd."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from memd.consolidation.upkeep import persons
from memd.core.document import parse_document
from memd.engine import language
from memd.vault.vault import Vault
from tests.conftest import Memd

NOTES = Path(__file__).parent / "data" / "personal-notes.tsv"

needs_language = pytest.mark.skipif(not language.available(), reason="the language model is not installed")


def personal_notes() -> list[tuple[str, str, str]]:
    """(time, subject a person files it under, note) of one person's week of notes."""
    with NOTES.open(encoding="utf-8") as handle:
        return [(row["time"], row["subject"], row["note"]) for row in csv.DictReader(handle, delimiter="\t")]


def topics(vault: Vault) -> dict[str, tuple[str, str]]:
    """Each topic's title and text, by file name."""
    found = {}
    for path in vault.topic_files():
        text = path.read_text(encoding="utf-8")
        found[path.stem] = (parse_document(text).title() or "", text)
    return found


def add_a_week_of_notes(memd: Memd) -> None:
    """The notes as a person adds them, consolidated at the end of each day."""
    day = None
    for time, _, note in personal_notes():
        if day is not None and time[:10] != day:
            memd("consolidate")
        memd("add", "--time", time, note)
        day = time[:10]
    memd("consolidate")


@needs_language
def test_a_week_of_notes_is_filed_under_the_subjects_they_name(memd: Memd, vault: Vault) -> None:
    add_a_week_of_notes(memd)
    found = topics(vault)
    assert len(found) <= 9
    by_subject: dict[str, set[str]] = {}
    for _, subject, note in personal_notes():
        holders = {stem for stem, (_, text) in found.items() if note in text}
        assert len(holders) == 1, note  # every note filed once
        by_subject.setdefault(subject, set()).update(holders)
    # Project Heron is one topic titled with its name, though one of its notes opens "Laptop note:".
    [heron] = by_subject["heron"]
    assert "Heron" in found[heron][0]
    assert "\n## " not in found[heron][1]  # six notes of one subject: one list under its title, no sections
    for person in ("bart", "lena"):
        [stem] = by_subject[person]
        assert person.title() in found[stem][0]
    # No topic is named from a word that only happened to open a note.
    for stem, (title, _) in found.items():
        assert not {"correction", "laptop", "desktop", "buy"} & set(title.lower().split()), stem
        assert title != "Address and Leeds", stem  # "Leeds" is in one of its two notes: "Address" is what both say
        assert title.count("\n") == 0 and title
    # One `#` title a file, and every heading has entries or sections under it.
    for stem, (_, text) in found.items():
        body = text.split("\n---\n", 1)[-1]
        assert sum(1 for line in body.splitlines() if line.startswith("# ")) == 1, stem
    # Tags are subjects: never a label heading a note ("Correction:", "Laptop:") nor a month ("3 March").
    for path in vault.topic_files():
        tags = vault.read(path).frontmatter.data.get("tags") or []  # type: ignore[union-attr]
        assert not {"correction", "laptop", "desktop", "march", "july", "december"} & set(tags), (path.name, tags)


@needs_language
def test_a_name_said_once_waits_in_the_months_notes_until_it_recurs(memd: Memd, vault: Vault) -> None:
    memd("add", "--time", "2026-11-17T18:00:00Z", "My friend Bartholomew goes by Bart; his birthday is 3 March.")
    memd("consolidate")
    assert list(topics(vault)) == ["notes-2026-11"]
    memd("add", "--time", "2026-11-21T11:00:00Z", "Bart recommended the book 'The Overstory'.")
    memd("consolidate")
    found = topics(vault)
    assert list(found) == ["bart"] and found["bart"][0] == "Bart"  # the notes topic, left empty, is gone
    assert "Bartholomew" in found["bart"][1] and "Overstory" in found["bart"][1]
    memd("verify")


@needs_language
def test_a_topic_a_person_retitled_keeps_its_title_and_alias(memd: Memd, vault: Vault) -> None:
    memd("add", "--time", "2026-11-17T09:00:00Z", "Heron milestone 1 (inventory of all albums) due 2026-11-28.")
    memd("add", "--time", "2026-11-17T09:05:00Z", "Heron deadline pushed to 2027-01-10.")
    memd("consolidate")
    [path] = vault.topic_files()
    text = path.read_text(encoding="utf-8")
    title = parse_document(text).title() or ""
    retitled = text.replace(f"# {title}", "# My photo archive move").replace("aliases:\n", "aliases:\n- Archive\n")
    path.write_text(retitled, encoding="utf-8")
    notes = [
        "Heron budget is 2,400 EUR.",
        "Bought oat milk and lentils.",
        "Heron demo rehearsal on Friday.",
        "Dentist appointment on 10 December.",
        "Ingrid wants Heron updates on Fridays.",
        "Ran 8 km along the canal.",
        "Heron albums scanned: 40 of 120.",
        "New kettle arrived.",
        "Heron: upload script rewritten.",
        "Lena's birthday is 12 July.",
    ]
    for n, note in enumerate(notes):
        memd("add", "--time", f"2026-11-{18 + n}T09:00:00Z", note)
        memd("consolidate")
    document = vault.read(path)
    assert document.title() == "My photo archive move"
    aliases = document.frontmatter.data["aliases"]  # type: ignore[union-attr]
    assert "Archive" in aliases
    assert "Heron albums scanned" in path.read_text(encoding="utf-8")  # new notes of its subject still join it
    result = memd("lint", ok=False)
    assert "links to no document" not in result.output
    memd("verify")


def test_memd_knows_a_title_a_person_gave_from_its_own() -> None:
    own = parse_document("---\naliases:\n- Milestone and deadline\n---\n# Milestone and deadline\n- x\n")
    assert not persons(own, "milestone-and-deadline")
    assert not persons(own, "milestone-and-deadline-2")  # a second topic of that name
    retitled = parse_document("---\naliases:\n- Milestone and deadline\n---\n# Project Heron\n- x\n")
    assert persons(retitled, "milestone-and-deadline")
    aliased = parse_document("---\naliases:\n- Milestone and deadline\n- Heron\n---\n# Milestone and deadline\n")
    assert persons(aliased, "milestone-and-deadline")
    merged = parse_document(
        "---\naliases:\n- Bart\n- Bart and book\nupdate_log:\n- '2026-11-21T00:00:00Z merged topic bart-and-book'\n"
        "---\n# Bart\n"
    )
    assert not persons(merged, "bart")  # an alias memd added when it merged a topic in is memd's


def test_lint_reports_a_link_to_a_topic_that_does_not_exist(memd: Memd, vault: Vault) -> None:
    (vault.topics_dir / "garden.md").write_text(
        '---\nrelated:\n- "[[compost]]"\n- "[[gone]]"\n---\n# Garden\n- planted garlic, see [[nowhere]]\n',
        encoding="utf-8",
    )
    (vault.topics_dir / "compost.md").write_text("# Compost\n- turn it weekly\n", encoding="utf-8")
    result = memd("lint", ok=False)
    assert result.exit_code != 0
    assert "topics/garden.md:4: [[gone]] links to no document in the vault" in result.output
    assert "topics/garden.md:7: warning: [[nowhere]] links to no document in the vault" in result.output
    assert "[[compost]]" not in result.output


@pytest.mark.slow
def test_thousands_of_short_unrelated_notes_make_a_few_topics_of_the_promised_size(memd: Memd, vault: Vault) -> None:
    from memd.index.spelling import dictionary

    # English words the embedding model reads, as a person's notes are.
    words = sorted(w for w in dictionary() if w.isalpha() and w.islower() and 4 <= len(w) <= 10)
    notes = [f"Remember {words[(n * 7919) % len(words)]} {n}" for n in range(3000)]
    memd("add", input="\n".join(notes) + "\n")
    memd("consolidate")
    found = topics(vault)
    assert 1 <= len(found) <= 30
    for path in vault.topic_files():
        data = vault.read(path).frontmatter.data  # type: ignore[union-attr]
        assert data["tokens"] <= vault.config.split_tokens == 5000
    filed = sum(text.count("\n- <seq=") for _, text in found.values())
    assert filed == 3000
    memd("verify")


def test_after_memd_merges_two_topics_every_link_to_the_one_gone_points_at_the_other(memd: Memd, vault: Vault) -> None:
    topics_dir = vault.topics_dir
    (topics_dir / "tomato-feeding.md").write_text(
        "# Tomato feeding\n"
        "- <seq=901,time=2026-09-01T09:00:00Z,source=user> Tomato plants need feeding every week with tomato feed.\n"
        "- <seq=902,time=2026-09-02T09:00:00Z,source=user> Feed the tomato plants weekly once the flowers come.\n"
    )
    (topics_dir / "tomato-watering.md").write_text(
        "# Tomato watering\n"
        "- <seq=903,time=2026-09-03T09:00:00Z,source=user> Tomato plants need deep watering twice a week.\n"
        "- <seq=904,time=2026-09-04T09:00:00Z,source=user> Water the tomato plants deeply, tomato leaves stay dry.\n"
    )
    (topics_dir / "garden-plan.md").write_text(
        '---\nrelated:\n- "[[tomato-feeding]]"\n- "[[tomato-watering]]"\n---\n# Garden plan\n'
        "See [[tomato-feeding]] and [[tomato-watering|watering]] for the tomatoes.\n"
        "- <seq=905,time=2026-09-05T09:00:00Z,source=user> Plan the raised beds for spring: garlic and beans.\n"
    )
    memd("add", "Tomato plants need feeding and deep watering, tomato feed every week.")
    result = memd("consolidate")
    [(absorbed, survivor)] = re.findall(r"merge (\S+) into (\S+)", result.output)
    assert not (topics_dir / f"{absorbed}.md").exists()
    plan = (topics_dir / "garden-plan.md").read_text(encoding="utf-8")
    assert f"[[{absorbed}" not in plan and f"[[{survivor}" in plan
    assert "for the tomatoes" in plan  # the person's line kept, its link followed
    aliases = vault.read(topics_dir / f"{survivor}.md").frontmatter.data["aliases"]  # type: ignore[union-attr]
    assert absorbed.replace("-", " ").capitalize() in aliases  # the old name still finds it
    assert "links to no document" not in memd("lint").output
    memd("verify")


def rename_a_linked_topic(memd: Memd, vault: Vault, related: str = "") -> Path:
    """``garden-plan.md``, which ``compost.md`` links to (in ``related`` too, when
    given), renamed ``raised-beds.md`` as a file manager or an editor that does
    not follow links would (Obsidian would); the renamed file."""
    topics_dir = vault.topics_dir
    (topics_dir / "garden-plan.md").write_text(
        "---\nid: garden-plan\n---\n# Garden plan\n"
        "- <seq=901,time=2026-09-01T09:00:00Z,source=user> Plan the raised beds for spring: garlic and beans.\n"
    )
    (topics_dir / "compost.md").write_text(
        f"---\nid: compost\n{related}---\n# Compost\nThe beds are in [[garden-plan]].\n"
        "- <seq=902,time=2026-09-02T09:00:00Z,source=user> Turn the compost heap every week.\n"
    )
    memd("init")
    renamed = topics_dir / "raised-beds.md"
    (topics_dir / "garden-plan.md").rename(renamed)
    return renamed


def test_a_topic_renamed_by_hand_keeps_the_links_to_it(memd: Memd, vault: Vault) -> None:
    topics_dir = vault.topics_dir
    rename_a_linked_topic(memd, vault, related='related:\n- "[[garden-plan]]"\n')
    assert "[[garden-plan]] links to no document" in memd("lint", ok=False).output
    memd("add", "Book the dentist for a check-up in March")  # filed in neither topic
    result = memd("consolidate")
    compost = (topics_dir / "compost.md").read_text(encoding="utf-8")
    assert "[[garden-plan" not in compost  # memd's related list is made again, the link with it
    assert "The beds are in [[raised-beds]]." in compost
    renamed = vault.read(topics_dir / "raised-beds.md")
    assert renamed.frontmatter.data["id"] == "raised-beds"  # type: ignore[union-attr]
    assert renamed.title() == "Garden plan"  # the person's title stays
    assert "renamed by hand from garden-plan" in str(renamed.frontmatter.data["update_log"])  # type: ignore[union-attr]
    assert "links to no document" not in memd("lint").output, result.output
    memd("verify")


def test_a_topic_renamed_by_hand_and_made_read_only_waits_and_blocks_nothing(memd: Memd, vault: Vault) -> None:
    topics_dir = vault.topics_dir
    renamed = rename_a_linked_topic(memd, vault)
    renamed.chmod(0o444)  # memd leaves a read-only topic alone, and files the buffer all the same
    memd("add", "Book the dentist for a check-up in March")
    assert "read-only" in memd("consolidate").output
    assert "Book the dentist" not in vault.current.read_text()
    renamed.chmod(0o644)
    memd("add", "Renew the car insurance before April")
    memd("consolidate")
    assert "[[raised-beds]]" in (topics_dir / "compost.md").read_text()


@needs_language
def test_notes_headed_with_their_subject_are_filed_under_it_not_read_as_speakers(memd: Memd, vault: Vault) -> None:
    notes = [
        "Car: MOT due 14 March, book at Kwik Fit again",
        "Garden: moved the rhubarb to the shady bed by the shed",
        "Car: front tyres at 3mm, replace before winter",
        "Garden: slugs ate every lettuce seedling, try copper tape",
        "Car: insurance renewal 540, last year 470, ring them",
        "Garden: sweet peas sown in root trainers on the windowsill",
    ]
    for n, note in enumerate(notes):
        memd("add", "--time", f"2026-09-0{n + 1}T08:00:00Z", note)
        if n % 2:
            memd("consolidate")
    found = topics(vault)
    assert {title for title, _ in found.values()} == {"Car", "Garden"}
    for title, text in found.values():
        assert all(f"{title}: " in line for line in text.splitlines() if "<seq=" in line)
    # A later note headed "Garden:" joins the topic, though the label shares no other word with it.
    memd("add", "--time", "2026-09-09T08:00:00Z", "Garden: the apple tree needs pruning in February")
    memd("consolidate")
    assert "apple tree" in topics(vault)["garden"][1]
    memd("verify")


@needs_language
def test_a_note_waiting_in_the_months_notes_joins_the_topic_of_its_subject_once_there_is_one(
    memd: Memd, vault: Vault
) -> None:
    memd("add", "--time", "2026-09-01T08:00:00Z", "Wisdom tooth aching again on the right, painkillers help")
    memd("consolidate")
    assert list(topics(vault)) == ["notes-2026-09"]
    for n, note in enumerate(
        [
            "Dentist: filling on the lower left done, numb for three hours",
            "Dentist: crown quote 650, get a second opinion",
            "Dentist: second opinion says the crown can wait a year",
        ]
    ):
        memd("add", "--time", f"2026-09-0{n + 2}T08:00:00Z", note)
    memd("consolidate")
    found = topics(vault)
    [dentist] = [stem for stem, (title, _) in found.items() if title == "Dentist"]
    assert "Wisdom tooth" in found[dentist][1]
    assert "1 note from notes-2026-09" in found[dentist][1]  # its update log says where it came from
    assert "notes-2026-09" not in found  # emptied, so gone
    memd("verify")


def test_a_label_heading_lines_that_speak_as_a_person_is_a_speaker() -> None:
    from memd.core.signature import Signature
    from memd.engine.base import Item
    from memd.engine.subjects import talking

    def said(*texts: str) -> list[Item]:
        return [Item(Signature.make(n, time="2026-11-20"), text) for n, text in enumerate(texts, 1)]

    chat = said("Dana: can you send me the invoice?", "Sam: I sent it yesterday", "Dana: thanks, I have it now")
    assert "Dana" in talking(chat)
    if language.available():  # without the pipeline every label heading two lines is a speaker
        notes = said("Car: MOT due 14 March", "Car: front tyres at 3mm", "Car: washer pump dead")
        assert talking(notes) == frozenset()


@needs_language
def test_notes_the_model_cannot_read_wait_in_the_months_notes_instead_of_a_topic_each(memd: Memd, vault: Vault) -> None:
    import random

    rng = random.Random(11)
    made_up = ["".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(4)) for _ in range(60)]
    memd("add", input="".join(f"Remember {word} {n}\n" for n, word in enumerate(made_up)))
    memd("consolidate")
    found = topics(vault)
    assert "notes-2026-12" in found or any(stem.startswith("notes-") for stem in found)
    assert len(found) <= 3
    assert sum(text.count("<seq=") for _, text in found.values()) == 60
    memd("verify")


@needs_language
def test_notes_the_model_cannot_read_that_share_a_noun_make_a_topic_titled_by_it(memd: Memd, vault: Vault) -> None:
    notes = ["Remember drika 5", "Remember vlosko 6", "Remember drika 77", "Remember tarbuno 8", "Remember drika 9"]
    memd("add", input="".join(f"{note}\n" for note in notes))
    memd("consolidate")
    found = topics(vault)
    assert found["drika"][0] == "Drika"  # the noun they share, not the verb ("Remember drika")
    assert found["drika"][1].count("<seq=") == 3
    (month,) = (text for stem, (_, text) in found.items() if stem.startswith("notes-"))
    assert "vlosko" in month and "tarbuno" in month  # "remember" alone is no subject
    memd("verify")


@pytest.mark.slow
@needs_language
def test_thousands_of_unreadable_notes_wait_in_the_months_notes_at_the_promised_size(memd: Memd, vault: Vault) -> None:
    import random

    rng = random.Random(5)
    made_up: list[str] = []
    while len(made_up) < 3000:  # distinct: no two notes share a word but "Remember"
        word = "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(4))
        if word not in made_up:
            made_up.append(word)
    memd("add", input="".join(f"Remember {word} {n}\n" for n, word in enumerate(made_up)))
    memd("consolidate")
    found = topics(vault)
    assert 1 <= len(found) <= 5
    for stem, (title, text) in found.items():
        assert stem.startswith("notes-") and title.startswith("Notes ")
        assert text.count("\n## ") == 0  # one list in the order the notes came, not a section per note
    for path in vault.topic_files():
        assert vault.read(path).frontmatter.data["tokens"] <= 5000  # type: ignore[union-attr]
    assert sum(text.count("<seq=") for _, text in found.values()) == 3000
    memd("verify")


@needs_language
def test_notes_sharing_a_noun_with_one_waiting_in_the_months_notes_open_its_topic(memd: Memd, vault: Vault) -> None:
    memd("add", input="Remember drika 5\nRemember vlosko 6\n")
    memd("consolidate")
    assert [stem for stem in topics(vault) if not stem.startswith("notes-")] == []  # each alone: both wait
    memd("add", input="Remember drika 77\nRemember drika 9\nRemember tarbuno 8\n")
    memd("consolidate")
    found = topics(vault)
    assert found["drika"][1].count("<seq=") == 3  # the one that waited joins them
    (month,) = (text for stem, (_, text) in found.items() if stem.startswith("notes-"))
    assert "Remember drika" not in month and "Remember vlosko" in month and "Remember tarbuno" in month
    memd("verify")


@needs_language
def test_unreadable_notes_go_by_the_words_they_share_and_a_word_all_of_them_say_names_nothing(
    memd: Memd, vault: Vault
) -> None:
    first = ["Vorlak tenbuka grimso", "Tenbuka vorlak pelmi", "Grimso tenbuka vorlak"]
    first += ["Zibbo kraunel fostu", "Kraunel zibbo maltri", "Fostu kraunel zibbo"]
    memd("add", input="".join(f"{note}, number {n}\n" for n, note in enumerate(first, 11)))
    memd("consolidate")
    memd("add", input="Tenbuka grimso pelmi, number 31\nVorlak pelmi tenbuka, number 33\n")
    memd("consolidate")
    found = topics(vault)
    assert not any("number" in stem or title.lower().startswith("number") for stem, (title, _) in found.items())
    (home,) = (text for text in (text for _, text in found.values()) if "Vorlak tenbuka grimso" in text)
    # The later notes join the topic of the notes whose words they share.
    assert "Tenbuka grimso pelmi, number 31" in home and "Vorlak pelmi tenbuka, number 33" in home
    assert "kraunel" not in home.lower()
    # The other subject of the first run is a topic of its own, not the month's notes.
    (other,) = (text for stem, (_, text) in found.items() if "Kraunel zibbo maltri" in text)
    assert "Zibbo kraunel fostu" in other and "Fostu kraunel zibbo" in other and "Notes " not in other
    memd("verify")


def test_two_notes_of_one_run_that_each_repeat_part_of_an_earlier_one_fold_into_it(memd: Memd, vault: Vault) -> None:
    memd("add", "Remember tenbuka kelo muost prani")
    memd("consolidate")
    memd("add", input="tenbuka kelo\nmuost prani\n")
    memd("consolidate")
    said = "".join(text for _, text in topics(vault).values())
    assert said.count("<seq=") == 1 and "<seq=1-3," in said  # as if each had been filed on its own
    memd("verify")
