"""A transcript filed by person: each speaker's turns go to a topic of their
own, titled with their name, in sections named by what the turns are about."""

from __future__ import annotations

from memd.core.document import Document
from memd.vault.vault import Vault

from .conftest import Memd

CHAT = [
    ("2026-03-02T18:00", "Ana: How was the pottery class on Saturday? Did you finish the clay bowl?"),
    ("2026-03-02T18:00", "Bo: The pottery class was great, I finished the clay bowl and glazed it blue."),
    ("2026-03-02T18:00", "Ana: My clay bowl from the pottery class cracked in the kiln, sadly."),
    ("2026-03-02T18:00", "Bo: A cracked bowl happens in every pottery class, the kiln is hard on clay."),
    ("2026-03-09T19:30", "Bo: I am training for the Lisbon marathon in May, running 40 km a week."),
    ("2026-03-09T19:30", "Ana: Marathon training sounds tough! How long is your longest run so far?"),
    ("2026-03-09T19:30", "Bo: My longest training run was 28 km along the river, marathon pace."),
    ("2026-03-09T19:30", "Ana: I ran a half marathon last year, training three mornings a week."),
]


def add_all(memd: Memd, turns: list[tuple[str, str]]) -> None:
    for time, text in turns:
        memd("add", "--time", time, text)


def topics(vault: Vault) -> dict[str, Document]:
    return {path.stem: vault.read(path) for path in vault.topic_files()}


def test_each_speaker_gets_a_topic_of_their_own_in_sections_by_subject(memd: Memd, vault: Vault) -> None:
    add_all(memd, CHAT)
    memd("consolidate")
    found = topics(vault)
    assert sorted(found) == ["ana", "bo"]
    for name, document in found.items():
        assert document.title() == name.title()
        said = {e.entry.text.split(":")[0] for e in document.signed()}
        assert said == {name.title()}  # each turn in its speaker's topic, and every one of them there
    # A question and its answer sit under the same heading, one in each person's topic.
    heading = {e.entry.text: e.headings for d in found.values() for e in d.signed()}
    asked, answered = CHAT[0][1], CHAT[1][1]
    assert heading[asked][1:] == heading[answered][1:] and heading[asked][1:] != ()  # below each one's title
    # The name heads the topic alone: no entry sits under it, so it weighs in no search match.
    assert all(e.headings != (d.title(),) for d in found.values() for e in d.entries())
    # Two people's topics stay apart, small and alike in words as they are.
    assert "ok" in memd("verify").output


def test_a_speakers_later_turns_join_their_topic_whatever_they_are_about(memd: Memd, vault: Vault) -> None:
    add_all(memd, CHAT)
    memd("consolidate")
    add_all(
        memd,
        [
            ("2026-04-01T09:00", "Bo: We adopted a rescue puppy called Rex from the shelter this weekend."),
            ("2026-04-01T09:00", "Bo: Rex the puppy chews every shoe in the flat and sleeps on the sofa."),
        ],
    )
    memd("consolidate")
    found = topics(vault)
    assert sorted(found) == ["ana", "bo"]
    assert any("Rex" in e.entry.text for e in found["bo"].signed())


def test_a_persons_topic_past_the_split_size_splits_into_pieces_that_keep_the_name(memd: Memd, vault: Vault) -> None:
    vault.config_path.write_text("[consolidate]\nsplit_tokens = 40\n")
    add_all(memd, CHAT)
    memd("consolidate")
    names = sorted(topics(vault))
    assert len(names) > 2 and all(name.startswith(("ana", "bo")) for name in names)
    for document in topics(vault).values():
        assert len({e.entry.text.split(":")[0] for e in document.signed()}) == 1
    assert "ok" in memd("verify").output


def test_notes_without_speakers_are_grouped_by_their_words_as_before(memd: Memd, vault: Vault) -> None:
    add_all(
        memd,
        [
            ("2026-03-02", "Planted tomatoes and basil in the raised garden bed."),
            ("2026-03-03", "The garden bed tomatoes need watering every second day."),
            ("2026-03-04", "Booked the flight to Kyoto for the conference in June."),
            ("2026-03-05", "The Kyoto conference hotel is near the station, booked for June."),
        ],
    )
    memd("consolidate")
    for document in topics(vault).values():
        assert document.title() != ""
        assert all(e.headings and e.headings[0] == document.title() for e in document.entries())


def test_a_chat_with_a_model_is_grouped_by_subject_not_by_user_and_assistant(memd: Memd, vault: Vault) -> None:
    add_all(
        memd,
        [
            ("2026-03-02T10:00", "User: The Atlas deploy script needs the staging database password rotated."),
            ("2026-03-02T10:00", "Assistant: The Atlas deploy script reads the staging database password from env."),
            ("2026-03-02T10:00", "User: The Atlas staging database moves to Postgres 16 next sprint."),
            ("2026-03-05T11:00", "User: My sourdough starter needs feeding twice a day with rye flour."),
            ("2026-03-05T11:00", "Assistant: A sourdough starter fed rye flour twice a day rises faster."),
            ("2026-03-05T11:00", "User: The sourdough loaf proved overnight in the fridge, rye flour crust."),
        ],
    )
    memd("consolidate")
    found = topics(vault)
    assert not {"user", "assistant"} & set(found)
    for document in found.values():
        said = {e.entry.text.split(":")[0] for e in document.signed()}
        assert said == {"User", "Assistant"}  # a subject's turns stay together, whoever said them


def test_a_persons_part_placed_in_a_topic_not_theirs_goes_by_words_as_before() -> None:
    from memd.core.signature import Signature
    from memd.engine.base import Block, Item, Section
    from memd.engine.offline import OfflineEngine

    def item(seq: int, text: str) -> Item:
        return Item(Signature.make(seq, time="2026-03-02"), text)

    garden = Section("Garden", (item(1, "Planted tomatoes and basil in the raised garden bed."),))
    block = Block("Tomatoes and water", (item(2, "Ana: The garden bed tomatoes need water every day."),))
    engine = OfflineEngine()
    # A topic of notes (a model may route there): the turn joins the section its words fit.
    [placed] = engine.update_topic([garden], block).sections
    assert [i.seqs.first for i in placed.items] == [1, 2]
    # Ana's own topic: her part keeps the block's heading, a section of its own.
    mine = Section("Garden", (item(1, "Ana: Planted tomatoes and basil in the raised garden bed."),))
    sections = engine.update_topic([mine], block).sections
    assert [(s.title, [i.seqs.first for i in s.items]) for s in sections] == [
        ("Garden", [1]),
        ("Tomatoes and water", [2]),
    ]


def test_a_conversation_filed_before_by_words_is_no_ones_so_new_turns_open_their_speakers_topic(
    memd: Memd, vault: Vault
) -> None:
    # A topic as consolidation by words left it: both sides of the conversation about evenly.
    (vault.root / "topics" / "pottery.md").write_text(
        "# Pottery\n"
        "- <seq=901,time=2026-03-01T09:00:00Z,source=user> Ana: How was the pottery class on Saturday?\n"
        "- <seq=902,time=2026-03-01T09:01:00Z,source=user> Bo: The pottery class was great, I glazed the clay bowl.\n"
        "- <seq=903,time=2026-03-01T09:02:00Z,source=user> Ana: My clay bowl cracked in the kiln.\n"
        "- <seq=904,time=2026-03-01T09:03:00Z,source=user> Bo: The kiln is hard on clay bowls.\n"
    )
    add_all(memd, [("2026-04-01T09:00", "Ana: I signed up for the advanced pottery class with the clay wheel.")])
    memd("consolidate")
    found = topics(vault)
    assert sorted(found) == ["ana", "pottery"]
    assert len(list(found["pottery"].signed())) == 4
    assert "ok" in memd("verify").output
