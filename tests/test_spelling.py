"""A query word the vault holds nowhere is read as its nearest known spelling."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memd.app import Memory
from memd.app.init import init_vault
from memd.daemon.serve import Server, request
from memd.index.analysis import analyse
from memd.index.spelling import edits, respell

from .conftest import Memd

KNOWN = {analyse(word)[0]: count for word, count in (("paint", 5), ("Melanie", 3), ("sunrise", 2), ("pants", 1))}


def held(term: str) -> int:
    return KNOWN.get(term, 0)


def test_a_misspelt_word_is_read_as_the_known_word_one_edit_away() -> None:
    read = respell("When did Melaniie paitn a sunrize?", analyse, held)
    assert read.query == "When did Melanie paint a sunrise?"
    assert read.words == (("Melaniie", "Melanie"), ("paitn", "paint"), ("sunrize", "sunrise"))


def test_of_two_known_neighbours_the_one_more_records_hold_wins() -> None:
    # "paits" is one edit from "pants" (held by 1 record) and from "paints" (the stem of "paint": 5).
    assert respell("paits", analyse, held).query == "paints"
    assert respell("paits", analyse, lambda term: 1 if term == "pant" else 0).query == "pants"


def test_a_word_spelt_right_stays_though_the_vault_holds_a_neighbour_of_it() -> None:
    posted = {analyse("posted")[0]: 4}
    # "hosted" is a word of the dictionary: not a misspelt "posted", whatever the vault holds.
    assert respell("Who hosted the party?", analyse, lambda term: posted.get(term, 0)).query == "Who hosted the party?"
    [(typed, read)] = respell("Who postd the party?", analyse, lambda term: posted.get(term, 0)).words
    assert typed == "postd" and analyse(read) == analyse("posted")


def test_without_a_dictionary_no_word_is_read_again() -> None:
    assert respell("Melaniie paitn", analyse, held, spelt_right=lambda word: True).query == "Melaniie paitn"


def test_the_dictionary_is_the_models_whole_words_read_from_either_file_it_ships(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memd.index import spelling
    from memd.index.model_files import ModelUnavailable, minilm_folder

    try:
        folder = minilm_folder()
    except ModelUnavailable:
        pytest.skip("the embedding model is not installed")
    words = spelling.dictionary()
    assert {"hosted", "paint", "sunrise"} <= words and "##ing" not in words and "[CLS]" not in words
    (tmp_path / "tokenizer.json").write_bytes((folder / "tokenizer.json").read_bytes())  # no vocab.txt here
    monkeypatch.setattr("memd.index.model_files.minilm_folder", lambda: tmp_path)
    spelling.dictionary.cache_clear()
    try:
        assert spelling.dictionary() == words
    finally:
        spelling.dictionary.cache_clear()


def test_known_short_and_unreadable_words_stay_as_typed() -> None:
    for query in ("Melanie paints", "bakr a cake", "zzzzzzz", "Мелани", "sunrise 2023"):
        assert respell(query, analyse, held).query == query


def test_a_pasted_page_costs_what_a_question_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each word looked at costs 53 spellings of its length: a 5,000-letter word took
    # 1.4 GB, a page of one misspelt word repeated 15 s; now each is bounded.
    import memd.index.spelling as spelling

    looked: list[str] = []
    real_edits = spelling.edits
    monkeypatch.setattr(spelling, "edits", lambda word: looked.append(word) or real_edits(word))
    assert respell("x" + "a" * 5000, analyse, held).query == "x" + "a" * 5000
    assert not looked  # too long to be a misspelt word
    page = respell("paitn " * 10_000, analyse, held)
    assert page.query == "paint " * 10_000 and looked == ["paitn"]  # a word repeated is read once
    assert page.words == (("paitn", "paint"),)
    looked.clear()
    many = " ".join(f"qqq{chr(97 + n // 26)}{chr(97 + n % 26)}" for n in range(500))
    assert respell(many, analyse, held).query == many
    assert len(looked) == spelling.MAX_WORDS


def test_every_edit_is_one_letter_dropped_added_changed_or_swapped() -> None:
    found = edits("pant")
    assert {"pan", "pants", "pint", "patn"} <= found and "pant" not in found
    assert all(abs(len(spelling) - 4) <= 1 for spelling in found)


@given(st.text(alphabet="abcdefghij XYZ.,?'", max_size=40))
def test_a_query_of_known_words_or_of_words_with_no_known_neighbour_is_searched_as_typed(query: str) -> None:
    assert respell(query, analyse, lambda term: 1).query == query
    assert respell(query, analyse, lambda term: 0).query == query


def test_search_finds_an_entry_through_a_misspelt_query_and_says_how_it_read_it(
    memd: Memd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMD_EMBEDDING", "none")  # by words alone: meaning would find it anyway
    memd("add", "Melanie painted a sunrise over the lake last weekend")
    memd("add", "Caroline started a new pottery class")
    searched = memd("search", "Melaniie paitned sunrize", "--json")
    found = json.loads(searched.stdout)
    assert found and "sunrise" in found[0]["text"]
    assert searched.stderr == "note: read 'Melaniie' as 'Melanie', 'paitned' as 'painted', 'sunrize' as 'sunrise'\n"
    assert memd("search", "Melanie sunrise").stderr == ""  # spelt right: nothing to say
    assert json.loads(memd("search", "zzzzqqq", "--json").stdout) == []


def test_a_served_search_reads_a_misspelt_query_as_the_process_does() -> None:
    with tempfile.TemporaryDirectory(prefix="m", dir="/tmp") as folder:  # a short path for the socket
        vault = init_vault(Path(folder) / "v").vault
        memory = Memory(vault)
        memory.add(["Flight to Kyoto on 3 April", "Pottery class on Tuesdays"])
        alone = memory.search("Pottrey class")
        server = Server(vault, Memory(vault))
        assert server.start()
        try:
            served = request(vault.root, "search", {"query": "Pottrey class", "limit": 10})
        finally:
            server.stop()
    assert alone.respelled == (("Pottrey", "Pottery"),)
    assert served is not None and served["respelled"] == [["Pottrey", "Pottery"]]
    assert [hit["seq"] for hit in served["results"]] == [hit["seq"] for hit in alone.results]


def test_ask_judges_a_misspelt_question_as_it_searched_it(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_EMBEDDING", "none")
    memd("add", "Melanie's pottery class is on Tuesdays at the community studio")
    memd("add", "Caroline is researching adoption agencies")
    right = json.loads(memd("ask", "When is Melanie's pottery class?", "--json").stdout)
    typed = json.loads(memd("ask", "When is Melanie's potery clas?", "--json").stdout)
    assert right["found"] and typed["found"]  # "potery" asked and found, as "pottery"
    assert [item["seq"] for item in typed["evidence"]] == [item["seq"] for item in right["evidence"]]
