"""The sentences memd embeds one at a time (memd/index/sentences.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memd.index.sentences import MAX_PARTS, MIN_WORDS, sentences, speaker


def test_a_transcript_line_keeps_its_speaker_on_each_sentence() -> None:
    text = "Ana: Wow, great! We went camping by the lake. The kids loved the boat ride."
    assert sentences(text) == ["Ana: We went camping by the lake.", "Ana: The kids loved the boat ride."]
    assert speaker(text) == "Ana"


def test_one_sentence_needs_no_vector_of_its_own() -> None:
    assert sentences("Takes her coffee with oat milk.") == []
    assert sentences("Ana: Thanks! Great to hear that you are well.") == []  # "Thanks!" is too short to count


def test_sentences_end_at_closing_quotes_and_line_breaks() -> None:
    assert sentences('He said "go home now." Then we left the park.') == [
        'He said "go home now."',
        "Then we left the park.",
    ]
    assert sentences("Packing list for the trip\nsleeping bags and the blue tent") == [
        "Packing list for the trip",
        "sleeping bags and the blue tent",
    ]


words = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=8)
pieces = st.lists(st.tuples(st.lists(words, min_size=1, max_size=6), st.sampled_from([". ", "! ", "? ", "\n", " "])))


@given(pieces)
def test_each_sentence_is_a_piece_of_the_text(parts: list[tuple[list[str], str]]) -> None:
    text = "".join(" ".join(ws) + end for ws, end in parts).strip()
    found = sentences(text)
    assert len(found) != 1 and len(found) <= MAX_PARTS
    flat = " ".join(text.split())
    for sentence in found:
        assert len(sentence.split()) >= MIN_WORDS
        assert " ".join(sentence.split()) in flat
