"""A model may never put words in a person's mouth: every model text that
becomes memory must rest on its sources, a person's entries keep their
words, and supersession must run forward in time."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memd.consolidation.verify import verify_vault
from memd.engine.fidelity import FUNCTION_WORDS, MARKED, Sources, unsupported
from memd.vault.vault import Vault

from .conftest import Memd
from .model_server import ScriptedModel

pytestmark = pytest.mark.slow  # the model path through a scripted HTTP server

# --- the check itself ----------------------------------------------------------

TURN = "I went to a LGBTQ support group yesterday and it was so powerful."


def check(text: str, *sources: str, times: tuple[str, ...] = ()) -> str | None:
    return unsupported(text, Sources(sources, times))


def test_copied_words_pass_and_an_invented_sentence_fails() -> None:
    assert check(TURN, TURN) is None
    invented = f"{TURN} I'm going to the next one tomorrow, but I'll have to wait for 20 days before that!"
    assert check(invented, TURN) == "the number 20 is not in its sources"
    assert "says what its sources do not (next, tomorrow)" in str(check(f"{TURN} The next one is tomorrow.", TURN))


@pytest.mark.parametrize(
    ("changed", "reason"),
    [
        ("Runs the Lisbon half marathon in March, 42 km", "the number 42 is not in its sources"),
        ("Runs the Porto half marathon in March, 21 km", "the name 'porto' is not in its sources"),
        ("Does not run the Lisbon half marathon in March, 21 km", "adds a negation"),
    ],
)
def test_a_changed_number_name_or_negation_fails(changed: str, reason: str) -> None:
    assert reason in str(check(changed, "Runs the Lisbon half marathon in March, 21 km"))


def test_dropping_a_negation_fails() -> None:
    assert "drops the negation" in str(
        check("Takes coffee with oat milk and sugar", "Takes coffee with oat milk, no sugar")
    )


def test_a_date_must_be_in_the_sources_or_near_an_entry_time() -> None:
    went = "Went running yesterday, 10 km"
    assert check("Went running on 2026-05-01, 10 km.", went, times=("2026-05-02T10:00:00Z",)) is None
    assert "the date '2026-09-01'" in str(check("Went running on 2026-09-01, 10 km.", went, times=("2026-05-02",)))


WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=9)
SENTENCE = st.lists(WORDS, min_size=3, max_size=8).map(lambda w: " ".join(w).capitalize() + ".")


@given(st.lists(SENTENCE, min_size=1, max_size=6), st.data())
def test_any_selection_of_source_sentences_is_supported(sentences: list[str], data: st.DataObject) -> None:
    chosen = data.draw(st.lists(st.sampled_from(sentences), min_size=1, max_size=len(sentences)))
    assert check(" ".join(chosen), " ".join(sentences)) is None


@given(st.lists(SENTENCE, min_size=1, max_size=6), st.integers(min_value=10, max_value=10**6))
def test_a_number_not_in_the_source_is_never_supported(sentences: list[str], number: int) -> None:
    source = " ".join(sentences)
    assert check(f"{sentences[0][:-1]} {number}.", source) is not None


SAID = "Wow, love that painting! So cool you found such a helpful group."


@pytest.mark.parametrize(
    ("rewrite", "added"),
    [
        ("Too bad you found such a helpful group.", "'too'"),
        ("I'm glad you found such a helpful group.", "'glad'"),
        ("So cool you never found such a helpful group.", "'never'"),
        ("So cool you found such a helpful group, the only one.", "'only'"),
        ("Love that awesome painting!", "'awesome'"),
    ],
)
def test_an_added_feeling_judgement_or_hedge_fails_like_an_invented_name(rewrite: str, added: str) -> None:
    assert f"adds {added}, which its sources do not say" in str(check(rewrite, SAID))
    # Answers may phrase their evidence, but not add these either.
    assert added in str(unsupported(rewrite, Sources([SAID]), threshold=0.6))


def test_words_the_sources_have_may_be_kept() -> None:
    assert check("So cool you found such a helpful group.", SAID) is None
    assert check("Love that painting!", SAID) is None


def content_word(word: str, source: str) -> bool:
    sources = Sources([source])
    return word not in FUNCTION_WORDS and not sources.has(word)


@given(
    st.lists(SENTENCE, min_size=1, max_size=4),
    st.one_of(st.sampled_from(sorted(MARKED)), WORDS),
    st.data(),
)
def test_any_single_inserted_content_word_not_in_the_sources_is_caught(
    sentences: list[str], word: str, data: st.DataObject
) -> None:
    source = " ".join(sentences)
    assume(content_word(word, source))
    sentence = data.draw(st.sampled_from(sentences))
    words = sentence[:-1].split()
    at = data.draw(st.integers(min_value=1, max_value=len(words)))
    rewrite = " ".join([*words[:at], word, *words[at:]]) + "."
    assert check(rewrite, source) is not None


# --- through the engine ---------------------------------------------------------


@pytest.fixture
def model(vault: Vault) -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        vault.config_path.write_text(
            f'[llm]\nbase_url = "{server.url}"\nmodel = "scripted"\nmax_retries = 0\ntimeout = "2s"\ngating = "off"\n'
        )
        yield server


def vault_text(vault: Vault) -> str:
    return "\n".join(p.read_text() for p in [vault.current, *vault.topic_files()] if p.exists())


def test_an_extract_reply_adding_a_sentence_is_rejected(memd: Memd, model: ScriptedModel, tmp_path: Path) -> None:
    note = tmp_path / "diary.md"
    note.write_text(f"{TURN} Everyone there was kind.\n")
    invented = f"{TURN} I'm going to the next one tomorrow, but I'll have to wait for 20 days before that!"
    model.always["extract"] = json.dumps({"entries": [{"id": 1, "text": invented}]})
    memd("ingest", str(note))
    assert model.operations().count("extract") == 2  # sent back once with the reason, then offline
    retry = model.requests[-1]["messages"][-1]["content"]
    assert "text 1: the number 20 is not in its sources" in retry
    text = vault_text(memd.vault)
    assert TURN in text and "Everyone there was kind." in text and "20 days" not in text


def test_an_extract_reply_that_repeats_its_input_is_rejected(memd: Memd, model: ScriptedModel, tmp_path: Path) -> None:
    note = tmp_path / "diary.md"
    note.write_text(f"{TURN} Everyone there was kind.\n")
    model.queue("extract", json.dumps({"texts": [{"id": 1, "text": f"{TURN} Everyone there was kind."}]}))
    result = memd("ingest", str(note))
    assert "warning" not in result.output  # the retry got a good reply
    retry = model.requests[-1]["messages"][-1]["content"]
    assert "the reply repeats its input" in retry


@pytest.mark.parametrize("added", ["glad", "bad", "never"])
def test_an_extracted_sentence_with_an_added_word_is_rejected(
    memd: Memd, model: ScriptedModel, tmp_path: Path, added: str
) -> None:
    note = tmp_path / "diary.md"
    note.write_text(f"{TURN} Everyone there was kind.\n")
    coloured = TURN.replace("it was", f"it was {added} and")
    model.always["extract"] = json.dumps({"entries": [{"id": 1, "text": coloured}]})
    memd("ingest", str(note))
    assert model.operations().count("extract") == 2  # sent back once with the reason, then offline
    assert f"adds {added!r}, which its sources do not say" in model.requests[-1]["messages"][-1]["content"]
    text = vault_text(memd.vault)
    assert TURN in text and coloured not in text


def add_ai(memd: Memd, *texts: str) -> None:
    memd("add", "--source", "ai", "\n".join(texts))


@pytest.mark.parametrize(
    "reworded",
    [
        "Runs the Lisbon half marathon in March, 42 km",
        "Runs the Porto half marathon in March, 21 km",
        "Does not run the Lisbon half marathon in March, 21 km",
    ],
)
def test_a_rewrite_never_changes_an_entrys_words(memd: Memd, model: ScriptedModel, reworded: str) -> None:
    # A consolidation keeps every entry's words (`memd verify` proves it): the
    # model says which entries go together, never what they say.
    add_ai(memd, "Runs the Lisbon half marathon in March, 21 km", "Takes coffee with oat milk")
    model.always["rewrite"] = json.dumps(
        {"blocks": [{"title": "Lisbon half marathon", "entries": [{"seqs": ["1"], "text": reworded}, {"seqs": ["2"]}]}]}
    )
    memd("consolidate")
    text = vault_text(memd.vault)
    assert "Runs the Lisbon half marathon in March, 21 km" in text and reworded not in text
    assert not verify_vault(memd.vault).problems


def test_a_merge_of_repeats_keeps_the_entry_that_says_it_all(memd: Memd, model: ScriptedModel) -> None:
    add_ai(memd, "Takes coffee with oat milk", "Takes coffee with oat milk every day")
    model.queue(
        "rewrite",
        json.dumps(
            {
                "blocks": [
                    {
                        "title": "Coffee",
                        "entries": [{"seqs": ["1", "2"], "text": "Coffee, oat milk, daily"}],
                    }
                ]
            }
        ),
    )
    assert "warning" not in memd("consolidate").output
    [topic] = memd.vault.topic_files()
    assert re.search(r"<seq=1-2,[^>]*> Takes coffee with oat milk every day$", topic.read_text(), re.MULTILINE)


def test_a_persons_words_are_identical_after_an_llm_consolidation(memd: Memd, model: ScriptedModel) -> None:
    notes = ["Takes coffee with oat milk", "Allergic to peanuts", "Runs the Lisbon half marathon in March"]
    memd("add", "\n".join(notes))  # source=user
    rewording = {
        "blocks": [
            {
                "title": "Coffee peanuts Lisbon",
                "entries": [{"seqs": [str(n)], "text": f"{t} (tidied)"} for n, t in enumerate(notes, start=1)],
            }
        ]
    }
    model.always["rewrite"] = json.dumps(rewording)
    result = memd("consolidate")
    assert "warning" not in result.output
    text = vault_text(memd.vault)
    for note in notes:
        assert re.search(rf"source=user[^>]*> {re.escape(note)}$", text, re.MULTILINE)
    assert "tidied" not in text


def test_a_merge_may_not_drop_a_persons_words(memd: Memd, model: ScriptedModel) -> None:
    memd("add", "Takes coffee with oat milk\nTakes coffee black on Mondays")
    model.always["rewrite"] = json.dumps({"blocks": [{"title": "Coffee", "entries": [{"seqs": ["1", "2"]}]}]})
    result = memd("consolidate")
    assert "say different things" in result.output
    text = vault_text(memd.vault)
    assert "Takes coffee with oat milk" in text and "Takes coffee black on Mondays" in text


def test_a_supersession_of_a_newer_entry_by_an_older_one_is_rejected(memd: Memd, model: ScriptedModel) -> None:
    add_ai(memd, "Dana's phone number is 555-0101")
    add_ai(memd, "Dana's phone number is 555-0199")
    backwards = {
        "blocks": [{"title": "Phone number", "entries": [{"seqs": ["1"]}]}],
        "superseded": [{"old": "2", "new": "1", "reason": "changed"}],
    }
    model.always["rewrite"] = json.dumps(backwards)
    result = memd("consolidate")
    assert "seq 1 cannot supersede seq 2: it is not newer" in result.output
    report = verify_vault(memd.vault)
    assert not report.problems and report.superseded == 1  # the offline rule: the newer number wins
    [topic] = memd.vault.topic_files()
    assert "555-0199" in topic.read_text() and "555-0101" not in topic.read_text()


def test_a_supersession_across_subjects_is_rejected(memd: Memd, model: ScriptedModel) -> None:
    add_ai(memd, "Takes coffee with oat milk", "Runs the Lisbon half marathon in March")
    model.always["rewrite"] = json.dumps(
        {
            "blocks": [{"title": "Lisbon half marathon", "entries": [{"seqs": ["2"]}]}],
            "superseded": [{"old": "1", "new": "2", "reason": "newer"}],
        }
    )
    result = memd("consolidate")
    assert "they are not about the same thing" in result.output
    assert not verify_vault(memd.vault).superseded


@pytest.mark.parametrize(
    "summary",
    [
        "<keywords>; <its most important fact>",
        "coffee, oat milk, peanut allergy; takes coffee with oat milk and is allergic to peanuts",
        "Melanie Painted Sunrise, a 2019 documentary about climate change",
    ],
)
def test_a_summary_from_the_prompt_or_elsewhere_is_rejected(memd: Memd, model: ScriptedModel, summary: str) -> None:
    add_ai(memd, "Runs the Lisbon half marathon in March", "Long marathon training run on Sundays")
    model.always["summarise"] = json.dumps({"summaries": [{"id": 0, "summary": summary}]})
    result = memd("consolidate")
    assert "summarise: " in result.output and "step(s) done offline" in result.output
    [topic] = memd.vault.topic_files()
    assert summary not in topic.read_text() and "marathon" in topic.read_text().split("summary:")[1].splitlines()[0]


def test_a_topic_update_merging_into_a_changed_wording_is_rejected(memd: Memd, model: ScriptedModel) -> None:
    add_ai(memd, "Takes coffee with oat milk, no sugar", "Long marathon training run on Sundays")
    memd("consolidate")
    [topic] = memd.vault.topic_files()
    add_ai(memd, "Takes coffee with oat milk and no sugar at all")
    model.queue("plan", json.dumps({"routes": [{"block": 0, "topic": topic.stem}]}))
    merged = {"seqs": ["1", "3"], "section": "Takes coffee with", "text": "Takes coffee with oat milk and sugar"}
    model.always["update_topic"] = json.dumps({"place": [merged]})
    result = memd("consolidate")
    assert "update_topic: seqs 1, 3 say different things" in result.output
    text = topic.read_text()
    assert "Takes coffee with oat milk, no sugar" in text and "oat milk and sugar" not in text
    assert not verify_vault(memd.vault).problems
