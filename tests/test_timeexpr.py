"""Relative times resolved against the moment of writing, recorded as `when=` beside the words."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.core.timeexpr import Span, parse_when, resolve, when_value
from memd.vault.vault import Vault

MONDAY = date(2023, 5, 8)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a support group yesterday.", ["2023-05-07"]),
        ("we painted it last week", ["2023-05-01..2023-05-07"]),
        ("two days ago I ran 10k", ["2023-05-06"]),
        ("Last Friday was fun", ["2023-05-05"]),
        ("Last Fri I took my kids to a pottery workshop", ["2023-05-05"]),
        ("see you next thurs", ["2023-05-11"]),
        ("we last sat together in the sun", []),  # "sat" and "sun" are other words as often as days
        ("next month I move to Leeds", ["2023-06"]),
        ("are you free this weekend?", ["2023-05-13..2023-05-14"]),
        ("last weekend we camped", ["2023-05-06..2023-05-07"]),
        ("in June we fly out", ["2023-06"]),
        ("last June", ["2022-06"]),
        ("back in March 2021", ["2021-03"]),
        ("3 weeks ago", ["2023-04-17..2023-04-23"]),
        ("a few days ago", ["2023-05-02..2023-05-06"]),
        ("the day before yesterday", ["2023-05-06"]),
        ("see u tmrw", ["2023-05-09"]),
        ("yday was wild lol", ["2023-05-07"]),
        ("next Friday", ["2023-05-12"]),
        ("last year", ["2022"]),
        ("yesterday, and again last week", ["2023-05-07", "2023-05-01..2023-05-07"]),
    ],
)
def test_expressions_resolve_against_the_day_of_writing(text: str, expected: list[str]) -> None:
    assert [span.render() for span in resolve(text, MONDAY)] == expected


NOVEMBER = date(2026, 11, 20)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dana moved to Kyoto in May", "2026-05"),  # the nearest May is next May; the verb says this one
        ("I went to Paris in April.", "2026-04"),
        ("Started a new job in June and loves it", "2026-06"),
        ("since May I have run daily", "2026-05"),
        ("We will fly out in April", "2027-04"),
        ("they'll be here in June", "2027-06"),
        ("I need a new bed in May", "2027-05"),  # no tense: the nearest May
        ("in June we fly out", "2026-06"),
        ("I went hiking. We fly to Rome in May", "2027-05"),  # another sentence's verb says nothing of this one
        ("Dana said the vendor contract renews in March", "2027-03"),  # the saying is past, the renewal is not
        ("Ana told me that the lease ends in May", "2027-05"),
        ("Ana told me in May", "2026-05"),  # the telling itself was in May
        ("He said they moved to Oslo in June", "2026-06"),
    ],
)
def test_a_month_without_a_year_follows_its_sentence_s_tense(text: str, expected: str) -> None:
    assert [span.render() for span in resolve(text, NOVEMBER)] == [expected]


@pytest.mark.parametrize("text", ["I may go", "on Friday we met", "recently", "the other day", "a sunday roast"])
def test_vague_or_ambiguous_phrases_give_no_date(text: str) -> None:
    assert resolve(text, MONDAY) == []


def test_when_value_needs_a_time_and_an_expression() -> None:
    assert when_value("went hiking yesterday", "2023-05-08T13:56:00Z") == "2023-05-07"
    assert when_value("went hiking yesterday", None) is None
    assert when_value("went hiking", "2023-05-08T13:56:00Z") is None
    assert when_value("yesterday", "not a time") is None


@given(st.text(max_size=200), st.dates(min_value=date(1950, 1, 1), max_value=date(2100, 1, 1)))
def test_any_text_resolves_to_dates_near_the_day_of_writing(text: str, today: date) -> None:
    for span in resolve(text, today):
        assert span.start <= span.end
        assert abs((span.start - today).days) < 40 * 366 and abs((span.end - today).days) < 40 * 366


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 1, 1)), st.integers(0, 400))
def test_rendered_spans_parse_back(start: date, length: int) -> None:
    span = Span(start, start + timedelta(days=length))
    assert parse_when(span.render()) == [span]


def test_hand_edited_when_values_are_skipped_not_fatal() -> None:
    assert parse_when("2023-05-07;soon;2023-13-01;2023-06") == [
        Span(date(2023, 5, 7), date(2023, 5, 7)),
        Span(date(2023, 6, 1), date(2023, 6, 30)),
    ]


def test_add_records_the_date_and_keeps_the_words(vault: Vault, memd) -> None:
    memd("add", "Went to the climbing gym yesterday", "--time", "2023-05-08T10:00:00Z")
    text = vault.current.read_text(encoding="utf-8")
    assert "when=2023-05-07>" in text
    assert text.rstrip().endswith("Went to the climbing gym yesterday")


def test_a_date_filter_finds_the_day_an_entry_names(vault: Vault, memd) -> None:
    memd("add", "Went to the climbing gym yesterday", "--time", "2023-05-08T10:00:00Z")
    memd("add", "Bought climbing shoes", "--time", "2023-05-08T11:00:00Z")
    found = json.loads(memd("search", "climbing", "--since", "2023-05-07", "--until", "2023-05-07", "--json").output)
    assert [hit["text"] for hit in found] == ["Went to the climbing gym yesterday"]


def test_a_question_naming_the_month_finds_the_entry(vault: Vault, memd) -> None:
    memd("add", "Moving to Leeds next month", "--time", "2023-05-30T10:00:00Z")
    memd("add", "Leeds has a great market", "--time", "2023-05-30T10:05:00Z")
    found = json.loads(memd("search", "Leeds in June", "--json").output)
    assert found[0]["text"] == "Moving to Leeds next month"


_PHRASE_WORDS = (
    "the day before after yesterday today tonight tomorrow last night this morning afternoon evening "
    "a few couple of an one two 3 12 day days week weeks weekend month months year years ago in next "
    "during since by until June Sept march Jan friday Sunday 2021 yday tmrw 2moro wknd yr mo "
    "we ran it was fun May may , . ?"
).split()


@settings(max_examples=400)
@given(st.lists(st.sampled_from(_PHRASE_WORDS), max_size=5))
def test_the_word_gate_never_changes_what_is_found(words: list[str]) -> None:
    """A text without any trigger word is not searched: that skips only texts the patterns would not match."""
    import memd.core.timeexpr as timeexpr

    text = " ".join(words)
    gated = resolve(text, MONDAY)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(timeexpr, "TRIGGERS", _EVERY_WORD)
        assert resolve(text, MONDAY) == gated


class _Everything(frozenset[str]):
    def isdisjoint(self, other: object) -> bool:
        return False


_EVERY_WORD = _Everything()
