"""`memd ask` and the times questions name: "what did I do last May?" keeps
to May, "when ...?" answers with a date as a person writes it, a question
about the present leads with the newest value, and what the question does not
ask about stays out of the answer's text."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from memd.vault.vault import Vault

from .conftest import Memd

NOW = "2026-12-06T10:00:00Z"  # a Sunday


@pytest.fixture
def diary(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> Memd:
    """A vault with dated notes from May and September, asked on 6 December 2026."""
    monkeypatch.setenv("MEMD_NOW", NOW)
    monkeypatch.setenv("MEMD_EMBEDDING", "none")  # words alone: the time, not meaning, must decide
    memd("add", "--time", "2026-05-14", "Went hiking in the Alps with Tom")
    memd("add", "--time", "2026-09-20", "Went to a pottery workshop in Lisbon")
    memd("add", "--time", "2026-12-02", "Picked up the new glasses from the optician")
    return memd


def ask(memd: Memd, question: str, *more: str) -> dict[str, Any]:
    return json.loads(memd("ask", question, "--json", *more).output)


def first_line(data: dict[str, Any]) -> str:
    return str(data["answer"]).splitlines()[0]


@pytest.mark.parametrize("question", ["what did I do last May?", "what did I do in May?", "what did I do this spring?"])
def test_a_question_about_may_is_answered_from_may(diary: Memd, question: str) -> None:
    data = ask(diary, question)
    assert data["found"] is True
    assert first_line(data).startswith("Went hiking in the Alps with Tom")
    assert "pottery" not in data["answer"]


def test_september_is_answered_from_september(diary: Memd) -> None:
    data = ask(diary, "what did I do in September?")
    assert first_line(data).startswith("Went to a pottery workshop in Lisbon")
    assert "hiking" not in data["answer"]


def test_a_month_with_its_year_is_found(diary: Memd) -> None:
    data = ask(diary, "what did I do in May 2026?")
    assert data["found"] is True and first_line(data).startswith("Went hiking")
    assert ask(diary, "what did I do in 2026?")["found"] is True


def test_days_named_relative_to_now(diary: Memd) -> None:
    assert first_line(ask(diary, "what did I do four days ago?")).startswith("Picked up the new glasses")
    assert first_line(ask(diary, "what did I do this week?")).startswith("Picked up the new glasses")
    assert first_line(ask(diary, "what did I do on 2 December?")).startswith("Picked up the new glasses")


def test_a_time_with_nothing_in_it_is_not_answered_from_another_time(diary: Memd) -> None:
    diary("add", "--time", "2026-12-05", "Baked bread with Noor")
    assert first_line(ask(diary, "what did I do yesterday?")).startswith("Baked bread with Noor")
    data = ask(diary, "where did I hike in September?")  # nothing about hiking then: the May hike is the closest
    assert "Alps" in data["answer"]


def test_before_christmas_and_in_a_year(diary: Memd) -> None:
    diary("add", "--time", "2025-12-20", "Wrapped presents for the whole family")
    diary("add", "--time", "2025-07-02", "Renewed the passport")
    data = ask(diary, "what did I do before Christmas last year?")
    assert first_line(data).startswith("Wrapped presents")
    # In the order they happened: July first.
    assert first_line(ask(diary, "what did I do in 2025?")).startswith("Renewed the passport")


def test_a_when_question_is_answered_with_the_date_as_a_person_writes_it(diary: Memd) -> None:
    data = ask(diary, "when did I pick up the glasses?")
    assert first_line(data).startswith("Picked up the new glasses from the optician (Wednesday 2 December 2026)")


def test_as_of_reads_the_time_against_that_day(diary: Memd, vault: Vault) -> None:
    from memd.ask.offline import ask as offline_ask
    from memd.ask.offline import asked_on

    with asked_on(date(2026, 6, 1)):
        said = offline_ask(vault, "what did I do last month?")
    assert said.found and said.answer.startswith("Went hiking in the Alps")


def test_the_newest_value_comes_first_and_older_ones_are_earlier_values(diary: Memd) -> None:
    diary("add", "--time", "2026-03-01", "My address is 12 Oak Street, Leeds")
    diary("add", "--time", "2026-03-01", "My new address is 42 Elm Road, Leeds")  # the same day, added later
    lines = ask(diary, "what is my new address?")["answer"].splitlines()
    assert lines[0].startswith("My new address is 42 Elm Road")
    assert lines[1].startswith("earlier: My address is 12 Oak Street")
    assert ask(diary, "what is my address now?")["answer"].splitlines()[0].startswith("My new address is 42 Elm Road")


def test_lines_that_share_no_word_with_the_question_stay_out_of_the_answer(diary: Memd) -> None:
    diary("add", "--time", "2026-02-01", "Bart's birthday is on 14 March")
    diary("add", "--time", "2026-10-01", "Moved in to 42 Elm Road last week")
    data = ask(diary, "when is Bart's birthday?")
    assert data["answer"].splitlines() == ["Bart's birthday is on 14 March [CURRENT.md:10]"]  # its words give the day
    assert any("Elm Road" in item["text"] for item in data["evidence"]) or len(data["evidence"]) >= 1


def test_a_real_name_question_finds_what_someone_goes_by(diary: Memd) -> None:
    diary("add", "--time", "2026-02-02", "My friend Bartholomew goes by Bart")
    diary("add", "--time", "2026-02-01", "Bart's birthday is on 14 March")
    for question in ("what is Bart's real name?", "what is Bart called?", "what is Bart's full name?"):
        data = ask(diary, question)
        assert data["found"] is True, question
        assert first_line(data).startswith("My friend Bartholomew goes by Bart"), question


def test_when_is_not_taken_from_a_side_clause(diary: Memd, vault: Vault) -> None:
    diary("add", "--time", "2026-11-20", "Deadline pushed to 2027-01-10 because Ingrid is on leave in December")
    diary("add", "--time", "2026-11-20", "Ingrid told me she flies out next week")
    lines = vault.current.read_text().splitlines()
    deadline = next(line for line in lines if "Deadline" in line)
    assert "when=" not in deadline
    assert "when=2026-11-23..2026-11-29" in next(line for line in lines if "flies out" in line)
    data = ask(diary, "when is the deadline?")
    assert "(Sunday 10 January 2027)" in first_line(data)


def test_memory_ask_is_answered_in_process_like_the_cli(diary: Memd, vault: Vault) -> None:
    from memd import Memory

    said = Memory(vault).ask("what did I do in September?")
    assert said.found and said.answer.startswith("Went to a pottery workshop")
    assert "hiking" not in said.answer


def test_the_search_tool_keeps_to_since_and_until(diary: Memd, vault: Vault) -> None:
    from memd.ask.agent import _run
    from memd.ask.tools import search

    found = search(vault, "went", since="2026-09-01", until="2026-09-30")
    assert [hit["text"] for hit in found] == ["Went to a pottery workshop in Lisbon"]
    result = _run(vault, {"tool": "search", "args": {"query": "went", "since": "2026-05-01", "until": "2026-05-31"}})
    assert [hit["text"] for hit in result["result"]["results"]] == ["Went hiking in the Alps with Tom"]
    wrong = _run(vault, {"tool": "search", "args": {"query": "went", "since": 2026}})
    assert "since must be a string" in wrong["error"]


def test_question_times() -> None:
    from memd.core.asked import question_time
    from memd.core.timeexpr import human_date

    today = date(2026, 12, 6)

    def span(question: str) -> str | None:
        asked = question_time(question, today)
        return asked.span.render() if asked else None

    assert span("what did I do last May?") == "2026-05"
    assert span("what did I do in May 2025?") == "2025-05"
    assert span("what did I do two weeks ago?") == "2026-11-16..2026-11-22"
    assert span("what did I do in 2025?") == "2025"
    assert span("what did I do yesterday?") == "2026-12-05"
    assert span("what did I do this spring?") == "2026-03-01..2026-05-31"
    assert span("what happened before Christmas?") == "2025-11-25..2025-12-24"
    assert span("who may come to the party?") is None  # "may" the verb
    assert span("when is Bart's birthday?") is None
    assert human_date(question_time("on 2 December 2026", today).span) == "Wednesday 2 December 2026"  # type: ignore[union-attr]


def test_add_and_a_plain_search_do_not_load_dateparser(diary: Memd) -> None:
    from .test_lazy_imports import modules_of

    for command in (["add", "Takes the train on Mondays"], ["search", "train"]):
        assert "dateparser" not in {name.split(".")[0] for name in modules_of(diary.vault, *command)}, command


@pytest.mark.slow  # an MCP server in a subprocess
def test_memory_ask_over_mcp_keeps_to_the_time_asked(vault: Vault) -> None:
    from .test_mcp import call, with_session

    seen: dict[str, Any] = {}

    async def body(session: Any) -> None:
        await call(session, "memory_add", text="Went hiking in the Alps with Tom", time="2026-05-14")
        await call(session, "memory_add", text="Went to a pottery workshop in Lisbon", time="2026-09-20")
        await call(session, "memory_add", text="My friend Bartholomew goes by Bart", time="2026-02-02")
        seen["may"] = await call(session, "memory_ask", question="what did I do in May 2026?")
        seen["name"] = await call(session, "memory_ask", question="what is Bart's real name?")

    with_session(vault, body)
    assert seen["may"]["found"] and seen["may"]["answer"].startswith("Went hiking in the Alps")
    assert "pottery" not in seen["may"]["answer"]
    assert seen["name"]["found"] and seen["name"]["answer"].startswith("My friend Bartholomew goes by Bart")


def test_answers_are_compared_normalised() -> None:
    from memd.app.answer_marks import answer_marks, normalise

    assert normalise("Sunday, May 7th, 2023") == normalise("7 May 2023") == normalise("(2023-05-07)") == "2023-05-07"
    assert normalise("The week before 9 June 2023") == "week before 2023-06-09"
    assert normalise("The weekend after 3June, 2022.") == normalise("the weekend after 3 June 2022")  # run together
    assert normalise("Two dogs!") == "2 dogs"

    def words(text: str) -> list[str]:
        return text.split()

    said = "Caroline: I went to the support group yesterday (Sunday 7 May 2023) [CURRENT.md:7]"
    assert answer_marks(said, "7 May 2023", words) == (True, True)
    assert answer_marks(said, "the LGBTQ support group", words) == (False, True)  # 2 of its 3 words
    assert answer_marks(said, "adoption agencies", words) == (False, False)
    assert answer_marks("", "7 May 2023", words) == (False, False)  # a refusal holds no answer


def test_eval_reports_the_offline_answers_per_category(tmp_path: Any, memd: Memd) -> None:
    from .test_eval import conversation

    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conversation()]))
    data = json.loads(memd("eval", "locomo", str(path), "--no-consolidate", "--json").output)
    answers = data["answers"]
    assert answers["4-single-hop"] == {"questions": 1, "contains_answer": 1.0, "half_words": 1.0, "refused": 0.0}
    assert answers["1-multi-hop"]["contains_answer"] == 1.0  # "vase", from Ben's pottery class
    unanswerable = answers["5-unanswerable"]
    assert unanswerable["refused"] == 1.0 and unanswerable["contains_answer"] is None
    out = memd("eval", "locomo", str(path), "--no-consolidate").output
    assert "offline answers" in out and "4-single-hop (1)" in out


@pytest.mark.parametrize(
    ("said", "written", "told"),
    [
        ("Went camping in the mountains last week", "2023-06-27", "the week before 27 June 2023"),
        ("We drove to the lake last weekend", "2023-07-17", "the weekend before 17 July 2023"),
        ("Started the pottery course two weeks ago", "2023-08-11", "two weeks before 11 August 2023"),
    ],
)
def test_a_week_said_relative_to_its_day_is_told_against_that_day(
    memd: Memd, monkeypatch: pytest.MonkeyPatch, said: str, written: str, told: str
) -> None:
    monkeypatch.setenv("MEMD_EMBEDDING", "none")
    memd("add", "--time", written, said)
    subject = said.split(" ", 1)[1].split(" last")[0].split(" two")[0]
    answer = first_line(ask(memd, f"When was it: {subject}?"))
    assert f"{' '.join(said.split())} ({told})" in answer


@pytest.mark.parametrize(
    ("said", "told"),
    [
        ("Won my fourth chess tournament on Friday, so proud", "(the Friday before 10 July 2022)"),
        ("I will run the charity race on Saturday", "(the Saturday after 10 July 2022)"),
        ("See the chess club on Friday!", ""),  # past or future? no date is better than a wrong one
    ],
)
def test_a_weekday_named_alone_is_told_against_the_day_said_when_its_tense_says_which(
    memd: Memd, monkeypatch: pytest.MonkeyPatch, said: str, told: str
) -> None:
    monkeypatch.setenv("MEMD_EMBEDDING", "none")
    memd("add", "--time", "2022-07-10T12:00", said)  # a Sunday
    subject = "chess" if "chess" in said else "charity race"
    answer = first_line(ask(memd, f"When was the {subject}?"))
    assert answer.startswith(f"{said}{' ' + told if told else ''} [")


def test_a_season_an_entry_places_dates_its_answer_not_the_day_it_was_said(
    memd: Memd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMD_EMBEDDING", "none")
    memd("add", "--time", "2023-12-26T12:00", "Organized a basketball camp for kids last summer")
    memd("add", "--time", "2023-12-26T12:00", "The pottery class this winter starts soon")
    assert "(summer 2023)" in first_line(ask(memd, "When was the basketball camp?"))
    assert "(winter 2023-24)" in first_line(ask(memd, "When is the pottery class?"))


def test_only_a_week_or_a_weekend_one_to_four_away_is_told_against_the_day_said() -> None:
    # (Days given outright, ``--meta when=...``, are written out: tests/test_ask.py.)
    from memd.ask.dates import told_against
    from memd.core.timeexpr import Span

    june = Span(date(2023, 6, 19), date(2023, 6, 25))  # the week a "last week" said on Tuesday 27 June names
    assert told_against(june, date(2023, 6, 27)) == "the week before 27 June 2023"
    assert told_against(june, date(2023, 7, 18)) == "four weeks before 18 July 2023"
    assert told_against(june, date(2023, 7, 25)) is None  # too far back to say so
    assert told_against(Span(date(2023, 6, 20), date(2023, 6, 26)), date(2023, 6, 28)) is None  # not Monday-Sunday
    assert told_against(Span(date(2023, 6, 26), date(2023, 7, 2)), date(2023, 6, 28)) is None  # this week
    weekend = Span(date(2023, 7, 8), date(2023, 7, 9))
    assert told_against(weekend, date(2023, 7, 17)) == "two weekends before 17 July 2023"
    # "this weekend", "next week", said on Friday 3 June 2022; said on the Saturday, the weekend is its own.
    assert told_against(Span(date(2022, 6, 4), date(2022, 6, 5)), date(2022, 6, 3)) == "the weekend after 3 June 2022"
    assert told_against(Span(date(2022, 6, 6), date(2022, 6, 12)), date(2022, 6, 3)) == "the week after 3 June 2022"
    assert told_against(Span(date(2022, 6, 4), date(2022, 6, 5)), date(2022, 6, 4)) is None
