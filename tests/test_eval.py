"""`memd eval locomo`: LoCoMo ingestion and the evidence-recall metric."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from memd.app.concentration import concentration
from memd.app.evaluate import evidence_found
from memd.index.records import Record
from memd.ingest.locomo import Question, load_locomo, session_time


def conversation() -> dict:
    return {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel last week."},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Lovely! What colour is Pixel?",
                    "img_url": ["x"],
                    "blip_caption": "a photo of a grey dog on a sofa",
                },
            ],
            "session_2_date_time": "10:00 am on 2 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "My pottery class made a blue vase."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Nice, I took Pixel hiking near the lake."},
            ],
        },
        "qa": [
            {
                "question": "What breed is the dog Ana adopted?",
                "answer": "greyhound",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {"question": "What did Ben make in pottery class?", "answer": "vase", "evidence": ["D2:1"], "category": 1},
            {
                "question": "When did Ana adopt the greyhound?",
                "answer": "May 2023",
                "evidence": ["D1:1"],
                "category": 2,
            },
            {"question": "What is Ben's favourite song?", "answer": "?", "evidence": ["D1:2"], "category": 5},
            {"question": "What did Ana make in pottery class?", "evidence": ["D2:1"], "category": 5},
        ],
    }


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conversation()]))
    return path


def test_session_time_becomes_iso() -> None:
    assert session_time("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00Z"
    assert session_time("not a date") is None


def test_loader_keeps_categories_1_to_4_and_image_captions(locomo_file: Path) -> None:
    [conv] = load_locomo(locomo_file)
    assert [q.category for q in conv.questions] == [4, 1, 2]
    assert [q.category for q in conv.unanswerable] == [5, 5]  # asked only to measure abstention
    assert conv.turns[1].text.endswith("[shares a photo: a photo of a grey dog on a sofa]")
    assert conv.turns[2].time == "2023-06-02T10:00:00Z"


def test_budget_counts_words_in_rank_order() -> None:
    def result(src: str, words: int) -> SimpleNamespace:
        return SimpleNamespace(record=Record("r", "entry", "CURRENT", "CURRENT.md", (), 1, 1, "w " * words, src=src))

    ranked = [result("D1:1", 200), result("D1:2;D1:3", 99), result("D1:4", 5), result("D1:5", 5)]
    # 200 + 99 = 299 words taken: still under 300, so the third result counts; the fourth does not.
    assert evidence_found(ranked, ("D1:2", "D1:3", "D1:4", "D1:5")) == {"D1:2", "D1:3", "D1:4"}


def test_eval_reports_recall_overall_and_by_category(locomo_file: Path, memd) -> None:
    data = json.loads(memd("eval", "locomo", str(locomo_file), "--no-consolidate", "--json").output)
    assert set(data) >= {"recall", "by_category", "questions", "entries", "topics", "seconds"}
    assert data["questions"] == 3 and data["entries"] == 4 and data["topics"] == 0
    assert data["by_category"]["4-single-hop"] == {"recall": 1.0, "coverage": 1.0, "questions": 1}
    assert data["by_category"]["1-multi-hop"]["recall"] == 1.0
    assert data["by_category"]["3-open-domain"]["questions"] == 0
    assert 0.0 <= data["recall"] <= 1.0


def test_eval_human_output(locomo_file: Path, memd) -> None:
    out = memd("eval", "locomo", str(locomo_file), "--no-consolidate").output
    assert out.startswith("evidence recall ") and "2-temporal" in out and "entries 4, topics 0" in out


def test_eval_reports_how_often_ask_abstains_on_unanswerable_and_answerable_questions(locomo_file: Path, memd) -> None:
    data = json.loads(memd("eval", "locomo", str(locomo_file), "--no-consolidate", "--json").output)
    # The pottery was Ben's and nothing mentions a song: both are unanswerable, and ask says so;
    # the three answerable questions are answered.
    assert data["abstention"] == {
        "unanswerable": 1.0,
        "answerable": 0.0,
        "unanswerable_questions": 2,
        "answerable_questions": 3,
    }
    out = memd("eval", "locomo", str(locomo_file), "--no-consolidate").output
    assert "abstention: 1.000 of 2 unanswerable (category 5) questions, 0.000 of 3 answerable ones" in out
    skipped = json.loads(
        memd("eval", "locomo", str(locomo_file), "--no-consolidate", "--no-abstention", "--json").output
    )
    assert skipped["abstention"] is None and skipped["recall"] == data["recall"]


def test_malformed_file_is_a_clear_error(tmp_path: Path, memd) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"qa": []}]')
    result = memd("eval", "locomo", str(bad), ok=False)
    assert result.exit_code == 1 and "malformed" in result.output


def test_eval_reports_words_only_beside_the_default_with_coverage_words_and_latency(locomo_file: Path, memd) -> None:
    data = json.loads(memd("eval", "locomo", str(locomo_file), "--no-consolidate", "--json").output)
    assert data["retrieval"] == "hybrid (minilm-l6)"
    lexical = data["settings"]["lexical"]
    assert set(lexical) >= {"recall", "coverage", "by_category", "words", "latency_ms"}
    assert 0 < data["words"] <= 300 + 50 and data["latency_ms"]["p50"] <= data["latency_ms"]["p95"]
    # "greyhound" and "vase" are in the text taken; "May 2023" is in the entry's time, not its text.
    assert data["by_category"]["4-single-hop"]["coverage"] == data["by_category"]["1-multi-hop"]["coverage"] == 1.0
    assert data["by_category"]["2-temporal"]["coverage"] == 0.0
    text = memd("eval", "locomo", str(locomo_file), "--no-consolidate").output
    assert "words only" in text and "coverage" in text and "p95" in text


def test_conversations_can_be_chosen_and_bad_choices_are_one_line(tmp_path: Path, memd) -> None:
    path = tmp_path / "two.json"
    second = conversation() | {"sample_id": "second"}
    path.write_text(json.dumps([conversation(), second]))
    data = json.loads(memd("eval", "locomo", str(path), "--no-consolidate", "--conversations", "2", "--json").output)
    assert [c["sample_id"] for c in data["conversations"]] == ["second"]
    bad = memd("eval", "locomo", str(path), "--conversations", "3-4", ok=False)
    assert bad.exit_code != 0 and "outside 1-2" in bad.output and "Traceback" not in bad.output


def test_selection_parses_ranges_and_lists() -> None:
    from memd.app.evaluate import parse_selection
    from memd.core.errors import FormatError

    assert parse_selection("1-3", 5) == [1, 2, 3]
    assert parse_selection("4,5", 5) == [4, 5]
    assert parse_selection("2, 1-2", 5) == [1, 2]
    for bad in ("0", "2-1", "x", "1-6"):
        with pytest.raises(FormatError):
            parse_selection(bad, 5)


def test_evidence_concentration_counts_distinct_topics_per_evidence_turn_of_multi_hop_questions() -> None:
    topic_of = {"D1:1": "ana-dogs.md", "D2:2": "ana-dogs.md", "D1:2": "ben.md", "D2:1": "pottery.md"}
    questions = (
        Question("Where has Ana taken Pixel?", ("D1:1", "D2:2"), 1),  # one topic for two turns: 0.5
        Question("What do they make?", ("D1:2", "D2:1", "D2:2"), 1),  # three topics for three turns: 1.0
        Question("Only one turn filed", ("D1:1", "D9:9"), 1),  # fewer than two turns in topics: left out
        Question("Not multi-hop", ("D1:1", "D1:2"), 4),
    )
    assert concentration(topic_of, questions) == [0.5, 1.0]


def test_eval_json_has_evidence_concentration(locomo_file: Path, memd) -> None:
    data = json.loads(memd("eval", "locomo", str(locomo_file), "--no-consolidate", "--json").output)
    assert data["evidence_concentration"] is None  # nothing is filed in topics without consolidating
    assert data["conversations"][0]["evidence_concentration"] is None
