"""`memd ask` offline: an extractive answer with cited evidence."""

from __future__ import annotations

import json

import pytest

from memd.vault.vault import Vault

FOOD = """\
---
id: food
summary: "coffee and food"
---
# Coffee
- <seq=3,time=2026-10-02T08:15,source=user> Takes coffee with oat milk, no sugar.
- <seq=14,time=2026-10-21T09:02,source=user> Switched coffee to a flat white with oat milk.
# Allergies
- <seq=8,time=2026-10-05T10:00,source=user> Allergic to peanuts.
"""


@pytest.fixture
def food(vault: Vault) -> Vault:
    (vault.topics_dir / "food.md").write_text(FOOD, encoding="utf-8")
    return vault


def test_answer_quotes_supporting_entries_newest_first_and_cites_blocks(food: Vault, memd) -> None:
    data = json.loads(memd("ask", "How does she take her coffee?", "--json").output)
    assert data["found"] is True
    support = [item["seq"] for item in data["support"]]
    assert support[:2] == ["14", "3"]
    assert data["answer"].splitlines()[0].startswith("Switched coffee to a flat white")
    # The entry hit widens to its heading block, cited as a line range.
    assert data["evidence"][0]["cite"] == "topics/food.md:5-7" and data["evidence"][0]["kind"] == "partition"
    # Two entries, listed; "3+14" would be one entry holding both seqs.
    assert data["evidence"][0]["seq"] == "3, 14"
    assert "  topics/food.md:5-7 seqs 3, 14" in memd("ask", "How does she take her coffee?").output.splitlines()
    # Passed back to get one entry, the list says what to do.
    from memd import Memory
    from memd.core.errors import FormatError

    with pytest.raises(FormatError, match="lists several entries: ask for one of them"):
        Memory.open(food.root).get("3, 14")
    assert Memory.open(food.root).get("14").located.entry.text.startswith("Switched coffee")


def test_human_output_lists_evidence_with_path_lines_and_seq(food: Vault, memd) -> None:
    out = memd("ask", "peanuts allergy?").output
    assert out.splitlines()[0].startswith("Allergic to peanuts.")
    assert "[topics/food.md:9]" in out.splitlines()[0]
    assert "  topics/food.md:8-9 seq 8" in out.splitlines()


def test_recent_current_entries_are_evidence(food: Vault, memd) -> None:
    memd("add", "Now drinks coffee black, gave up oat milk")
    data = json.loads(memd("ask", "coffee oat milk", "--json").output)
    assert any(item["path"] == "CURRENT.md" for item in data["evidence"])
    assert "CURRENT.md" in {item["path"] for item in data["support"]}


def test_evidence_respects_the_token_budget(food: Vault, memd) -> None:
    from memd.core.tokens import count_tokens

    memd("add", "\n".join(f"Coffee note {n}: oat milk flat white at the corner cafe on day {n}" for n in range(20)))
    roomy = json.loads(memd("ask", "coffee oat milk", "--budget", "1500", "--json").output)
    tight = json.loads(memd("ask", "coffee oat milk", "--budget", "50", "--json").output)
    assert sum(count_tokens(item["text"]) for item in roomy["evidence"]) > 50  # so the budget has work to do
    assert tight["evidence"], "a small budget still returns the best evidence that fits"
    assert sum(count_tokens(item["text"]) for item in tight["evidence"]) <= 50


def test_nothing_found_is_said_plainly(food: Vault, memd) -> None:
    out = memd("ask", "what about zeppelins?").output
    assert out.startswith("Nothing relevant found in memory")
    data = json.loads(memd("ask", "the of and", "--json").output)
    assert data["found"] is False and data["evidence"] == []


def test_a_question_the_vault_cannot_answer_is_not_found(food: Vault, memd) -> None:
    memd("add", "Dana's sister lives in Lisbon")
    data = json.loads(memd("ask", "What is Dana's favourite colour?", "--json").output)
    assert data["found"] is False and data["support"] == [] and data["evidence"]  # the closest are still shown
    assert data["answer"].startswith("Nothing in memory answers this; closest: Dana's sister lives in Lisbon")
    assert json.loads(memd("ask", "Where does Dana's sister live?", "--json").output)["found"] is True


def test_entries_that_only_share_the_name_asked_about_do_not_answer(vault: Vault, memd) -> None:
    memd("add", "Dana's dentist appointment is on 3 December")
    memd("add", "Dana is allergic to peanuts")
    memd("add", "Dana's phone number is 555 0134")
    out = memd("ask", "What is Dana's blood type?").output
    assert out.startswith("Nothing in memory answers this; closest: ")
    assert "\nclosest:\n" in out  # the nearest memories are cited, not quoted as the answer
    data = json.loads(memd("ask", "What is Dana's blood type?", "--json").output)
    assert data["found"] is False and data["support"] == []
    assert json.loads(memd("ask", "What is Dana allergic to?", "--json").output)["found"] is True


def test_what_someone_else_said_does_not_answer_a_question_about_a_named_speaker(vault: Vault, memd) -> None:
    chat = [
        "Melanie: I ran a charity race for mental health last Saturday",
        "Caroline: That's amazing! How did it go?",
        "Melanie: It made me realize how important self-care is",
        "Caroline: I went to an LGBTQ support group yesterday",
        "Melanie: Was it helpful?",
        "Caroline: Yes, the stories there inspired me to pursue counseling",
    ]
    memd("add", "--time", "2023-05-08T13:56", "\n".join(chat))
    asked = json.loads(memd("ask", "What did Caroline realize after her charity race?", "--json").output)
    assert asked["found"] is False and asked["answer"].startswith("Nothing in memory answers this")
    right = json.loads(memd("ask", "What did Melanie realize after her charity race?", "--json").output)
    assert right["found"] is True and "self-care" in right["answer"]
    assert json.loads(memd("ask", "What inspired Caroline to pursue counseling?", "--json").output)["found"] is True


def test_what_someone_asks_or_tells_the_other_is_about_the_other(vault: Vault, memd) -> None:
    chat = [
        "Gina: Hey Jon! I just got accepted for a fashion internship!",
        "Jon: Congrats, Gina! So stoked for you and your fashion internship. Where is the internship?",
        "Gina: It's a part-time position in the fashion department of an international company.",
        "Jon: I finally opened my dance studio downtown last week.",
    ]
    memd("add", "--time", "2023-01-20T16:04", "\n".join(chat))
    # Jon's words hold "fashion internship", but he says them to Gina, about hers.
    asked = json.loads(memd("ask", "Where is Jon's fashion internship?", "--json").output)
    assert asked["found"] is False and asked["answer"].startswith("Nothing in memory answers this")
    assert json.loads(memd("ask", "Where is Gina's fashion internship?", "--json").output)["found"] is True
    assert json.loads(memd("ask", "Where did Jon open his dance studio?", "--json").output)["found"] is True


def test_a_line_is_cut_into_what_the_speaker_says_of_themselves_and_to_the_listener() -> None:
    from memd.ask.told import told

    own, said_to = told("Jon: Congrats, Gina! I opened my studio. Did you make the bowl? Your bowl is lovely.")
    assert own == "Congrats, Gina! I opened my studio."
    assert said_to == "Did you make the bowl? Your bowl is lovely."
    assert told("Walks the dog at six") == ("Walks the dog at six", "")
    # Told to the listener in the first person, it is the speaker's own news as well.
    own, said_to = told("Maria: Hey John! just wanted to tell you what happened, i took a poetry class. Did you?")
    assert own == "Hey John! just wanted to tell you what happened, i took a poetry class."
    assert said_to == "just wanted to tell you what happened, i took a poetry class. Did you?"


def test_news_a_speaker_tells_the_listener_answers_a_question_about_the_speaker(vault: Vault, memd) -> None:
    chat = [
        "Maria: Hey John, how's it going? Just wanted to tell you I took a poetry writing class at the library.",
        "John: Nice! I have taken a cooking class before.",
        "Maria: What did you cook?",
    ]
    memd("add", "--time", "2023-02-10T10:00", "\n".join(chat))
    asked = json.loads(memd("ask", "What writing classes has Maria taken?", "--json").output)
    assert asked["found"] is True and "poetry writing class" in asked["answer"]


def test_a_question_naming_everyone_who_speaks_is_answered_by_what_they_say_to_each_other(vault: Vault, memd) -> None:
    chat = [
        "Melanie: Books have such power! Which one has been your favorite guide?",
        'Caroline: I loved "Becoming Nicole" by Amy Ellis Nutt, a true story.',
        "Melanie: Thanks, Caroline. Been reading that book you recommended, it is great.",
        "Caroline: Glad you like the book I recommend to everyone!",
    ]
    memd("add", "--time", "2023-05-08T13:56", "\n".join(chat))
    asked = json.loads(memd("ask", "What book did Caroline recommend to Melanie?", "--json").output)
    assert asked["found"] is True and "Becoming Nicole" in asked["answer"]


def test_an_answer_is_dated_by_the_day_it_speaks_of(vault: Vault, memd) -> None:
    memd("add", "--time", "2026-11-22", "--meta", "when=2026-11-14..2026-11-15", "Bought a road bike in Utrecht")
    memd("add", "--time", "2026-11-22", "Booked the bike service for next spring")
    out = json.loads(memd("ask", "When did I buy the road bike?", "--json").output)["answer"]
    assert "Bought a road bike in Utrecht (14 to 15 November 2026)" in out  # "when ...?": the days in words
    assert "(2026-11-22)" not in out.splitlines()[0]


@pytest.mark.parametrize(("filler", "quoted"), [("", 5), (" and then we talked about the weather" * 4, 3)])
def test_short_entries_leave_room_for_more_of_them_in_an_answer(
    memd, monkeypatch: pytest.MonkeyPatch, filler: str, quoted: int
) -> None:
    # Three entries always; then more while the answer stays within 100 words (a chat's short turns).
    monkeypatch.setenv("MEMD_EMBEDDING", "none")
    for n, place in enumerate(["the lake", "the river", "the bay", "the canal", "the harbour", "the coast"]):
        memd("add", "--time", f"2026-06-0{n + 1}", f"Went kayaking on {place}{filler}")
    answer = json.loads(memd("ask", "Where did I go kayaking?", "--json").output)["answer"]
    assert len(answer.splitlines()) == quoted
    assert len(answer.split()) <= 100 or quoted == 3
