"""`memd search`: ranked hits with citations, filters, and hostile queries."""

from __future__ import annotations

import json

import pytest

from memd.vault.vault import Vault

TRAVEL = """\
---
id: travel
summary: "trips"
---
# Kyoto
- <seq=13,time=2026-10-12T21:00,source=user> Planning a Kyoto trip with Sam in April.
- <seq=22,time=2026-11-10T22:00,source=ai> Booked the ryokan in Higashiyama for four nights.
# Seats
- <seq=15,time=2026-10-21T09:30,source=user> Prefers aisle seats on long flights.
"""


@pytest.fixture
def travel(vault: Vault) -> Vault:
    (vault.topics_dir / "travel.md").write_text(TRAVEL, encoding="utf-8")
    return vault


def hits(memd, *args: str) -> list[dict]:
    return json.loads(memd("search", *args, "--json").output)


def test_search_prints_path_line_and_signature(travel: Vault, memd) -> None:
    out = memd("search", "ryokan").output
    assert out.splitlines()[0] == "topics/travel.md:7  <seq=22,time=2026-11-10T22:00,source=ai>"
    assert "Higashiyama" in out


def test_search_json_returns_records(travel: Vault, memd) -> None:
    [first, *_] = hits(memd, "aisle seats")
    assert first["path"] == "topics/travel.md" and first["line"] == 9
    assert first["seq"] == "15" and first["source"] == "user" and first["headings"] == ["Seats"]
    assert set(first) >= {"id", "kind", "doc", "end_line", "time", "src", "text", "score", "snippet"}


def test_stemming_matches_other_word_forms(travel: Vault, memd) -> None:
    assert [h["seq"] for h in hits(memd, "booking")][:1] == ["22"]


def test_limit(travel: Vault, memd) -> None:
    assert len(hits(memd, "kyoto ryokan aisle", "--limit", "1")) == 1


def test_since_until_and_source_filters(travel: Vault, memd) -> None:
    everything = {h["seq"] for h in hits(memd, "kyoto ryokan aisle") if h["kind"] == "entry"}
    assert everything == {"13", "22", "15"}
    assert {h["seq"] for h in hits(memd, "kyoto ryokan aisle", "--since", "2026-10-20")} >= {"22", "15"}
    assert "13" not in {h["seq"] for h in hits(memd, "kyoto ryokan aisle", "--since", "2026-10-20")}
    # A bare date as --until includes that whole day.
    assert {h["seq"] for h in hits(memd, "kyoto ryokan aisle", "--until", "2026-10-12")} == {"13"}
    assert {h["seq"] for h in hits(memd, "kyoto ryokan aisle", "--source", "ai")} == {"22"}


def test_bad_time_filter_is_a_clear_error(travel: Vault, memd) -> None:
    result = memd("search", "kyoto", "--since", "last tuesday", ok=False)
    assert result.exit_code == 1 and "invalid time" in result.output
    backwards = memd("search", "kyoto", "--since", "2026-11-01", "--until", "2026-10-01", ok=False)
    assert backwards.exit_code == 1
    assert "since 2026-11-01 is after until 2026-10-01: no time is between them" in backwards.output
    # The same day as both ends is that day.
    assert {h["seq"] for h in hits(memd, "kyoto", "--since", "2026-10-12", "--until", "2026-10-12")} == {"13"}


def test_a_list_past_its_end_says_so(travel: Vault, memd) -> None:
    result = memd("list", "--offset", "100")
    assert "no documents past 100 (the vault has 2)" in result.output


@pytest.mark.parametrize("query", ["the and of", '"', ":", "*", "(", "AND", "OR NOT", "*:*"])
def test_stopword_or_syntax_only_queries_find_nothing(travel: Vault, memd, query: str) -> None:
    assert hits(memd, query) == []


@pytest.mark.parametrize("command", ["search", "ask"])
@pytest.mark.parametrize("query", ["", "   "])
def test_a_blank_query_is_a_mistake_said_not_an_empty_answer(travel: Vault, memd, command: str, query: str) -> None:
    result = memd(command, query, ok=False)
    assert result.exit_code == 1 and "nothing to" in result.output and "give a few words" in result.output


@pytest.mark.parametrize("query", ['"ryokan', "ryokan:", "ryokan*", "(ryokan", "ryokan AND", 'title:"ryokan"'])
def test_query_syntax_characters_are_plain_text(travel: Vault, memd, query: str) -> None:
    assert [h["seq"] for h in hits(memd, query)][:1] == ["22"]


def test_new_entries_are_searchable_without_reindex(vault: Vault, memd) -> None:
    memd("add", "Takes coffee with oat milk")
    assert [h["text"] for h in hits(memd, "oat milk")] == ["Takes coffee with oat milk"]
    memd("add", "Allergic to peanuts")
    assert [(h["seq"], h["via"]) for h in hits(memd, "peanuts")][:1] == [("2", "match")]


def test_the_entry_next_to_a_hit_comes_along(vault: Vault, memd) -> None:
    memd("add", "Sam: what colour is the new bike?\nAna: bright orange, with a wicker basket.\nSam: cool")
    found = [(h["text"], h["via"]) for h in hits(memd, "bike")]
    assert found[0] == ("Sam: what colour is the new bike?", "match")
    assert ("Ana: bright orange, with a wicker basket.", "neighbour") in found


def test_a_question_near_the_top_is_followed_by_its_reply(vault: Vault, memd) -> None:
    memd("add", "Ana: my family and I work out at the climbing gym, family pass")
    chat = ["Sam: how often do you work out with your family?", "Ana: three times a week, it keeps us on track"]
    memd("add", "\n".join(chat))
    memd("add", "Sam: my family never works out together, we just watch films")
    found = hits(memd, "how often do you work out with the family?")
    texts = [h["text"] for h in found]
    # The reply holds none of the question's words: it comes along (by meaning, or as the
    # question's neighbour), below its question and below every stronger match of the words.
    reply = texts.index("Ana: three times a week, it keeps us on track")
    assert found[reply]["score"] > 0
    assert texts[0] == "Sam: how often do you work out with your family?"
    assert all(h["score"] > found[reply]["score"] for h in found[:reply])


def test_a_repeat_of_a_better_hit_gives_way_to_something_new(vault: Vault, memd) -> None:
    memd("add", "--time", "2026-01-05", "Kyoto trip: booked the ryokan in Higashiyama for the Kyoto trip")
    memd("add", "--time", "2026-02-11", "Kyoto trip: booked the ryokan in Higashiyama, Kyoto trip confirmed")
    memd("add", "--time", "2026-03-20", "Kyoto trip: Sam wants to see the moss garden")
    texts = [h["text"] for h in hits(memd, "kyoto trip")]
    # By score alone the near-duplicate booking notes take ranks 1 and 2.
    assert texts[1] == "Kyoto trip: Sam wants to see the moss garden"


def test_edited_topic_is_found_without_reindex(travel: Vault, memd) -> None:
    # Before the edit, a trip entry may come up by meaning, but nothing holds the word.
    assert all(h["via"] != "match" for h in hits(memd, "shinkansen"))
    path = travel.topics_dir / "travel.md"
    path.write_text(TRAVEL.replace("Booked the ryokan", "Booked the shinkansen and the ryokan"), encoding="utf-8")
    found = hits(memd, "shinkansen")
    assert [(h["path"], h["line"], h["via"]) for h in found][:1] == [("topics/travel.md", 7, "match")]


def test_deleted_topic_disappears_from_results(travel: Vault, memd) -> None:
    assert hits(memd, "ryokan")
    (travel.topics_dir / "travel.md").unlink()
    assert hits(memd, "ryokan") == []


def test_no_matches_message(travel: Vault, memd) -> None:
    result = memd("search", "zeppelin")
    assert result.output.strip() == "no matches"


def test_extra_signature_keys_are_searchable(vault: Vault, memd) -> None:
    memd("add", "Renew the passport", "--meta", "project=kyoto-trip")
    memd("add", "Buy running shoes")
    assert [h["meta"] for h in hits(memd, "kyoto")][:1] == [{"project": "kyoto-trip"}]


def test_a_huge_limit_returns_what_there_is(vault: Vault, memd) -> None:
    from memd import Memory

    memd("add", "Takes coffee with oat milk")
    # tantivy sizes its collector by the limit: 10^9 made it allocate 32 GB and abort the process.
    found = Memory.open(vault.root).search("coffee", limit=10**9).results
    assert [hit["text"] for hit in found] == ["Takes coffee with oat milk"]


def test_what_a_person_writes_in_a_section_of_entries_is_found_and_answers(vault: Vault, memd) -> None:
    memd("add", "Atlas owner is Priya")
    memd("consolidate")
    [topic] = vault.topic_files()
    topic.write_text(topic.read_text() + "Priya's deputy is Okonkwo.\n")
    [hit] = hits(memd, "Okonkwo")
    assert hit["text"] == "Priya's deputy is Okonkwo." and hit["line"] == len(topic.read_text().splitlines())
    assert "Priya's deputy is Okonkwo." in memd("ask", "who is Priya's deputy?").output.split("\n\n")[0]
    # A numbered item in the buffer is no entry: lint says so, with the fix.
    vault.current.write_text(vault.current.read_text() + "1. Renew the Okonkwo contract in March\n")
    assert "a numbered item is no entry" in memd("lint").output
    # In a fenced block it is code, not a list; a fence with an info string opens one, never closes it.
    vault.current.write_text(vault.current.read_text().replace("1. Renew", "```\n1. Renew") + "```\n")
    assert "numbered item" not in memd("lint").output
    buffer = vault.current.read_text()
    vault.current.write_text(buffer + "```\n2. code\n```python\n3. code\n```\n4. Call Okonkwo\n")
    warned = [line for line in memd("lint").output.splitlines() if "numbered item" in line]
    assert len(warned) == 1 and f"CURRENT.md:{len(buffer.splitlines()) + 6}:" in warned[0]
