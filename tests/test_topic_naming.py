"""Topic names a person would write, small talk left in sources, grouping by subject and meaning."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.core.signature import Signature
from memd.engine import themes
from memd.engine.base import Item, Section
from memd.engine.summaries import summary
from memd.engine.text import _SPEAKER, STOPWORDS
from memd.engine.titles import UNTITLED, _compound, salient, title
from memd.ingest.smalltalk import bears_fact
from memd.vault.vault import Vault

from .conftest import Memd


@pytest.fixture
def minilm() -> None:
    """Skips the test where the embedding model it needs is not installed."""
    from memd.index.embedding import unavailable

    if unavailable("minilm-l6"):
        pytest.skip("the embedding model is not installed")


def items(*texts: str) -> list[Item]:
    return [Item(Signature.make(n, time="2026-11-20"), text) for n, text in enumerate(texts, 1)]


MELANIE = items(
    "Melanie: I just signed up for a pottery class yesterday. [shares a photo of a clay bowl]",
    "Melanie: Wow, Caroline, that's awesome! Here's a photo of my painting of a sunset.",
    "Melanie: The pottery class made me calm, and my painting of the lake is done. [shares a photo of a lake]",
    "Melanie: Thanks, Caroline! I love my pottery and my painting, they are my therapy.",
)


def test_a_title_names_the_salient_nouns_never_caption_or_reaction_words_nor_the_speaker() -> None:
    name = title(MELANIE, frozenset({"caroline", "melanie"}))
    assert name in ("Pottery and painting", "Painting and pottery")
    words = set(name.lower().split())
    assert not words & UNTITLED and "caroline" not in words and "melanie" not in words


def test_a_name_of_two_words_is_one_thing_in_a_title() -> None:
    turns = items(
        "Melanie: Thanks, Caroline! It was Matt Patterson, he is so talented!",
        "Melanie: Matt Patterson sang for two hours and his songs were amazing.",
        "Caroline: Missed you! Whenever I hear Matt Patterson I think of that night.",
    )
    assert title(turns, frozenset({"melanie", "caroline"})).startswith("Matt Patterson")
    # A capital that opens a sentence says nothing of a name.
    trip = items("Ana: Great trip! Visited Lisbon with Sam.", "Ana: Lisbon was sunny. Visited Porto too.")
    assert "Visited Lisbon" not in title(trip, frozenset({"ana"}))


def test_two_nouns_said_together_are_one_thing_in_a_title() -> None:
    room = items(
        "Joanna: We painted the living room blue last weekend.",
        "Joanna: My living room finally has a reading corner.",
        "Joanna: The living room lamp broke, so the room is dark.",
    )
    assert title(room, frozenset({"joanna"})) == "Living room"
    # A verb's form after a noun makes no thing of the two, nor do words on either side of a full stop.
    work = ["Jon: All the hard work paying off feels great.", "Jon: My work paying the bills is dull."]
    assert _compound(["work", "paying"], work) is None
    assert _compound(["dreams", "talk"], ["Tim: Chase your dreams. Talk soon!", "Tim: Big dreams. Talk later!"]) is None
    assert _compound(["model", "role"], ["Nate: She is my role model.", "Nate: A role model, really."]) == "role model"


@given(st.lists(st.text(st.characters(blacklist_characters="["), max_size=120), min_size=1, max_size=6))
def test_any_text_gets_a_title_and_a_summary_of_its_own_words(texts: list[str]) -> None:
    entries = items(*texts)
    name = title(list(entries))
    assert name and "\n" not in name
    told = summary([Section(name, tuple(entries))])
    for piece in told.split(" · "):
        # Each piece is verbatim: its words are one entry's own (cut at a word, spaces joined; no photo caption).
        words = piece.rstrip("…").split()
        assert any(" ".join(words) in " ".join(text.split()) for text in texts) or not words


def test_a_topic_of_one_speakers_turns_is_titled_and_tagged_with_their_name(memd: Memd, vault: Vault) -> None:
    for item in MELANIE:
        memd("add", item.text)
    memd("consolidate")
    [path] = vault.topic_files()
    document = vault.read(path)
    data = document.frontmatter.data  # type: ignore[union-attr]
    assert path.stem == "melanie" and document.title() == "Melanie" and data["tags"][0] == "melanie"
    # The name heads the topic alone; the section under it is named by what the turns are about.
    assert {e.headings for e in document.entries()} == {("Melanie", "Painting and pottery")}


def test_notes_without_speakers_are_named_by_the_name_most_of_them_mention() -> None:
    notes = items(
        "The Atlas cut-over is planned for the first weekend of March.",
        "Priya reviews the Atlas migration scripts on Monday.",
        "Rollback plan for the Atlas cut-over is in the runbook.",
    )
    assert title(notes) == "Atlas cut-over"  # a name keeps its capital, a hyphenated word is one


def test_a_summary_is_verbatim_facts_not_a_keyword_list() -> None:
    text = summary([Section("Melanie", tuple(MELANIE))])
    pieces = text.split(" · ")
    assert 1 <= len(pieces) <= 2
    for piece in pieces:
        said = piece.removeprefix("Melanie: ").rstrip("…")
        assert any(said in item.text for item in MELANIE)  # verbatim
    assert "Wow" not in text and "photo" not in text.lower()


def test_a_summary_keeps_a_title_before_a_name_with_its_sentence() -> None:
    notes = items("Physio is Dr. Okafor; appointment on 2 December about the knee.", "Dentist on 10 December at 9:00.")
    text = summary([Section("Health", tuple(notes))])
    assert "Physio is Dr. Okafor; appointment on 2 December about the knee." in text.split(" · ")
    assert not any(piece.startswith("Okafor") for piece in text.split(" · "))
    # A name of three letters ends its sentence: "Sam." is no title.
    from memd.engine.summaries import _sentences

    assert _sentences("I walked the dog with Sam. The vet said his hip is fine.") == [
        "I walked the dog with Sam.",
        "The vet said his hip is fine.",
    ]


def test_a_summary_tells_what_happened_before_general_remarks() -> None:
    turns = items(
        "Caroline: Pets bring so much joy and love to a family.",
        "Caroline: Family pets bring love and so much joy.",
        "Melanie: We adopted a kitten named Bailey last week.",
        "Melanie: The kids love the kitten and the pets.",
    )
    # The two remarks share the most words with the whole, but say nothing anyone did.
    told = summary([Section("Pets", turns)])
    assert "adopted a kitten named Bailey last week" in told
    assert not ("Pets bring so much joy" in told and "Family pets bring love" in told)


def test_a_summary_leaves_out_a_sentence_that_points_back_or_urges_on() -> None:
    # Lifted out of its turn, "It taught me…" no longer says what taught what;
    # "Let's keep…" urges, and tells nothing.
    turns = items(
        "Caroline: I joined a transgender support group last year. It taught me self-acceptance and support.",
        "Caroline: The support group meets every Tuesday at the community center.",
        "Caroline: They helped me accept myself and find support in the group.",
    )
    text = summary([Section("Caroline", tuple(turns))])
    assert "It taught" not in text and "They helped" not in text
    assert "support group" in text
    urged = items(
        "Caroline: The support group meets every Tuesday at the community center.",
        "Caroline: Let's keep going to the support group at the community center every Tuesday.",
        "Caroline: I joined the support group last year.",
    )
    assert "Let's" not in summary([Section("Caroline", tuple(urged))])


@pytest.mark.parametrize(
    "turn, fact",
    [
        ("Wow, what an experience! How did it make you feel?", False),
        ("Thanks, Mel! Bye!", False),
        ("Hey Caroline! Good to see you!", False),
        ("Thanks! We won! It was really close.", True),  # a first-person statement tells something
        ("The pottery class starts on 3 March.", True),
        ("Cool! [shares a photo of a clay bowl]", True),
        ("Do you still keep the greenhouse tomatoes from last spring?", True),  # a question with content
    ],
)
def test_small_talk_is_told_from_a_turn_that_bears_a_fact(turn: str, fact: bool) -> None:
    assert bears_fact(turn) is fact


def test_small_talk_of_an_ingested_chat_stays_in_the_source_only(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    chat = [
        {"role": "user", "content": "Hey! Good to see you!", "time": "2026-11-20T09:00:00Z"},
        {"role": "assistant", "content": "Wow, what an experience! How did it feel?", "time": "2026-11-20T09:01:00Z"},
        {"role": "user", "content": "We moved the standup to 9:30 on Tuesdays.", "time": "2026-11-20T09:02:00Z"},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(chat))
    result = json.loads(memd("ingest", str(path), "--json").output)[0]
    buffered = vault.current.read_text()
    assert "standup" in buffered and "Good to see you" not in buffered and "experience" not in buffered
    copy = (vault.root / result["source"]).read_text()
    assert "Good to see you" in copy and "what an experience" in copy  # verbatim in sources/
    memd("add", "Hey! Good to see you!")  # what a person adds is always kept
    assert "Good to see you" in vault.current.read_text()


@pytest.mark.usefixtures("minilm")
def test_grouping_by_meaning_gathers_each_speakers_facts(memd: Memd, vault: Vault) -> None:
    memd("config", "set", "consolidate.grouping", "meaning")
    turns = [
        ("2026-01-05", "Ana: I signed up for a pottery class at the community centre."),
        ("2026-01-05", "Ben: My team at work moved the release to Friday."),
        ("2026-03-12", "Ana: My first clay bowl came out of the kiln today."),
        ("2026-03-12", "Ben: The release went out and the customers are happy."),
        ("2026-06-20", "Ana: I glazed three mugs for my sister at pottery."),
        ("2026-06-20", "Ben: We are planning the next release for September."),
    ]
    for when, text in turns:
        memd("add", "--time", when, text)
    memd("consolidate")
    holders: dict[str, set[str]] = {}
    for path in vault.topic_files():
        for located in vault.read(path).signed():
            holders.setdefault(located.entry.full_text.split(":")[0], set()).add(path.name)
    assert holders == {"Ana": holders["Ana"], "Ben": holders["Ben"]}
    assert len(holders["Ana"]) == 1 and len(holders["Ben"]) == 1 and holders["Ana"] != holders["Ben"]
    assert (vault.index_dir / "meaning.npz").is_file()  # each text embedded once, kept for the next run


def test_status_reports_topic_health(memd: Memd, vault: Vault) -> None:
    memd("config", "set", "consolidate.split_tokens", "40")
    for n in range(12):
        memd("add", f"Garden note {n}: the tomatoes in bed {n} need water and the basil needs sun every morning.")
    memd("consolidate")
    health = json.loads(memd("status", "--json").output)["topic_health"]
    assert health["count"] == len(vault.topic_files()) >= 1
    assert 0 < health["median_tokens"] <= health["max_tokens"]
    assert (
        set(health) == {"count", "median_tokens", "max_tokens", "tiny", "huge", "skipped"} and health["skipped"] == []
    )
    line = next(x for x in memd("status").output.splitlines() if x.startswith("topics"))
    assert f"largest {health['max_tokens']}" in line and "tiny" in line


def test_lint_warns_of_a_topic_over_the_split_size_without_failing(memd: Memd, vault: Vault) -> None:
    big = "\n".join(f"- <seq={n},time=2026-11-20> Tomato bed {n} needs water every morning." for n in range(1, 41))
    (vault.root / "topics" / "garden.md").write_text(f"# Garden\n\n{big}\n")
    memd("config", "set", "consolidate.split_tokens", "100")
    result = memd("lint")  # warnings alone exit 0
    assert "topics/garden.md:1: warning: " in result.output and "over consolidate.split_tokens (100)" in result.output
    # One entry is never cut: a topic of one long entry has nothing a split could do.
    long = " ".join(f"Tomato bed {n} needs water every morning." for n in range(1, 41))
    (vault.root / "topics" / "garden.md").write_text(f"# Garden\n\n- <seq=1,time=2026-11-20> {long}\n")
    assert "split_tokens" not in memd("lint").output


@pytest.mark.usefixtures("minilm")
def test_vectors_consolidation_made_are_reused_by_search(
    memd: Memd, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memd.index import IndexStore, embedding

    memd("config", "set", "consolidate.grouping", "meaning")
    texts = ["Ana adopted a greyhound called Pixel", "Ben repaired the blue bicycle", "Ana bakes rye bread"]
    for n, text in enumerate(texts):
        memd("add", "--time", f"2026-01-0{n + 1}", text)
    memd("consolidate")
    model_read: list[str] = []
    real = embedding.embed_many

    def counted(embedder: Any, texts: Sequence[str], workers: int | None = None) -> Any:
        model_read.extend(texts)
        return real(embedder, texts, workers)

    monkeypatch.setattr(embedding, "embed_many", counted)
    store = IndexStore(vault)
    try:
        store.sync()
    finally:
        store.close()
    assert not set(texts) & set(model_read)  # each entry's vector came from consolidation's cache


def test_grouping_by_meaning_without_the_model_groups_by_words(memd: Memd, vault: Vault) -> None:
    memd("config", "set", "consolidate.grouping", "meaning")
    memd("config", "set", "index.embedding", "none")
    for text in ["Ana: I signed up for a pottery class.", "Ben: The release moved to Friday."]:
        memd("add", text)
    memd("consolidate")
    assert not (vault.index_dir / "meaning.npz").exists()  # no vectors were made
    filed = [e.entry.full_text for p in vault.topic_files() for e in vault.read(p).signed()]
    assert sorted(filed) == ["Ana: I signed up for a pottery class.", "Ben: The release moved to Friday."]


# The rule names() applied before it was made linear: a capitalised word opens a
# sentence when the text before it ends as this pattern says.
_OPENS_SENTENCE = re.compile(r"(?:^|[.!?:;\"]\s+|\n)$")
_PIECES = ["Ann", "New York", "Mel-Rose", "The", "I", "x", ".", "?", ";", '"', ",", " ", "\n", "\t", "\u2028"]


@settings(max_examples=400)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_the_names_an_entry_mentions_are_those_inside_a_sentence(pieces: list[str]) -> None:
    text = "".join(pieces)
    body = _SPEAKER.sub("", text, count=1)
    expected = {
        match.group(1).lower()
        for match in themes._NAME.finditer(body)
        if not _OPENS_SENTENCE.search(body[: match.start()])
        and match.group(1).lower() not in STOPWORDS
        and match.group(1) != "I"
    }
    assert themes.names(text) == expected


def test_names_of_a_long_topic_cost_in_proportion_to_its_length() -> None:
    # A sentence start is judged from the characters just before a word: looking
    # back over the whole text for each word took 3 s of CPU for 140 KB, and grows
    # with the square of the length (about 30 s here); linear, it takes milliseconds.
    line = "Melanie: We took the kids to Yellowstone with Caroline. Then Oscar barked at Mel!\n"
    text = line * 5000  # 420 KB
    started = time.process_time()
    assert themes.names(text) == {"yellowstone", "caroline", "mel"}  # "Then Oscar" opens a sentence
    assert time.process_time() - started < 5.0


def test_the_title_of_a_long_entry_costs_in_proportion_to_its_length() -> None:
    # Whether a word is a noun is judged from the three words before it: looking back
    # to the text's start for each word took 57 s of CPU for a 25,000-word entry
    # (about 4 minutes at this length); linear, it takes a fraction of a second.
    text = " ".join(["word"] * 49_999 + ["pottery"])
    started = time.process_time()
    assert title(items(text)) != UNTITLED
    assert time.process_time() - started < 10.0


def _clusters_by_scanning_the_matrix(rows: Any, link: float) -> list[list[int]]:
    """The plain statement of ``themes.clusters``: join the most similar pair
    of the whole matrix, first in row-major order among equals (O(n^3))."""
    import numpy as np

    n = len(rows)
    members: list[list[int]] = [[i] for i in range(n)]
    sums = np.array(rows, dtype=np.float64)
    sizes, alive = np.ones(n), np.ones(n, dtype=bool)
    sim = sums @ sums.T / np.outer(sizes, sizes)
    np.fill_diagonal(sim, -np.inf)
    while alive.sum() > 1:
        a, b = divmod(int(np.argmax(sim)), n)
        if sim[a, b] < link:
            break
        a, b = min(a, b), max(a, b)
        members[a] += members[b]
        members[b] = []
        sums[a] += sums[b]
        sizes[a] += sizes[b]
        alive[b] = False
        sim[b, :] = sim[:, b] = -np.inf
        row = sums @ sums[a] / (sizes * sizes[a])
        row[~alive] = row[a] = -np.inf
        sim[a, :] = sim[:, a] = row
    return [sorted(m) for m in members if m]


@settings(max_examples=200, deadline=None)
@given(
    rows=st.integers(1, 40).flatmap(
        lambda n: st.lists(st.lists(st.integers(-2, 2), min_size=3, max_size=3), min_size=n, max_size=n)
    ),
    link=st.sampled_from([0.0, 0.3, -0.5, 1.0]),
)
def test_clustering_joins_the_same_pairs_as_scanning_the_whole_matrix(rows: list[list[int]], link: float) -> None:
    import numpy as np

    # Small integer rows make many equal similarities: the order among equals must hold too.
    matrix = np.array(rows, dtype=np.float32)
    assert themes.clusters(matrix, link) == _clusters_by_scanning_the_matrix(matrix, link)


@pytest.mark.usefixtures("minilm")
def test_a_huge_section_is_named_once_per_piece_kept(tmp_path: Path) -> None:
    from memd.consolidation.upkeep import _cut
    from memd.engine.offline import OfflineEngine
    from memd.index.meaning import Meaning

    named: list[int] = []

    class Counting(OfflineEngine):
        def title(self, items: list[Item]) -> str:
            named.append(len(items))
            return super().title(items)

    meaning = Meaning("minilm-l6", tmp_path)
    subjects = ["pottery class and the kiln", "marathon training and new shoes", "tomatoes and basil in the garden"]
    many = items(*(f"Ana: week {n}, I had {subjects[n % 3]} again, and {subjects[(n // 3) % 3]}" for n in range(120)))
    pieces = _cut(Counting(meaning), Section("Everything", tuple(many)), 150)
    assert len(pieces) > 4
    assert sorted(str(item.seqs) for piece in pieces for item in piece.items) == sorted(str(i.seqs) for i in many)
    # Each piece kept is named once, by what is in it, as naming every half on the way named it;
    # no half that was cut again was named.
    assert sorted(named) == sorted(len(piece.items) for piece in pieces)
    assert [piece.title for piece in pieces] == [title(list(piece.items)) for piece in pieces]


def test_a_summary_leaves_out_the_greeting_and_name_a_fact_is_said_with() -> None:
    said = items(
        "Maria: Yep John, let's keep up the good work and make a difference!",
        "Maria: Yeah John, I volunteer at the homeless shelter every Friday.",
        "Maria: I adopted a dog named Shadow from the shelter last month.",
    )
    told = summary([Section("Shelter", tuple(said))])
    assert "Maria: I volunteer at the homeless shelter every Friday." in told
    assert "Yeah John" not in told and "let's" not in told


def test_a_secret_s_mark_never_names_a_topic(memd: Memd, vault: Vault) -> None:
    memd("add", "The wifi password is hunter2secret for the router")
    memd("add", "password: tr0ub4dor&3 for the router's admin page")
    memd("consolidate")
    [topic] = vault.topic_files()
    heading = next(line for line in topic.read_text().splitlines() if line.startswith("# "))
    assert "redacted" not in topic.name and "REDACTED" not in heading
    assert "router" in heading.lower() or "password" in heading.lower()  # what both notes say


GARDEN = items(
    "planted the tomatoes in the raised bed, six plants",
    "Tomatoes need feeding every week once the flowers come",
    "planted basil between the tomatoes to keep pests off",
    "first tomatoes picked today, the cherry ones",
    "Compost bin is full, planted garlic where the tomatoes were",
    "tomatoes split after the heavy rain, water them evenly",
    "Blight on two of the tomatoes, planted them too close",
    "Saved seeds from the best tomatoes for next year",
)


@pytest.mark.usefixtures("minilm")
def test_notes_are_named_by_the_words_closest_to_what_they_are_about() -> None:
    from memd.index.meaning import Meaning

    meaning = Meaning("minilm-l6", None)
    # By meaning the word every note says names them, not a verb's past
    # ("planted", said in half of them). By words a word in most of the notes
    # weighs nothing, and they were "Flowers and week".
    name = title(GARDEN, meaning=meaning)
    assert name.startswith("Tomatoes") and "planted" not in name.lower()
    # Nor an irregular past ("wrote"), which no ending gives away.
    novel = items(
        "Wrote the first chapter of the novel", "Wrote two pages of the novel before work", "The novel needs a new end"
    )
    name = title(novel, meaning=meaning)
    assert name.startswith("Novel") and "wrote" not in name.lower()
    # A name keeps its capital though a note opens with it.
    family = items("Ellie's wedding is in June", "Booked a hotel near the venue for Ellie's wedding", "Call Ellie")
    assert "Ellie" in title(family, meaning=meaning)
    # So does one that only ever opens a note, when it owns something there.
    school = items("Leo's nativity play is on the 14th", "Leo's costume for the nativity needs a tail")
    assert "Leo" in salient(school, 2, meaning=meaning)
    # A transcript's turns are named as before: the model names notes only.
    assert title(MELANIE, frozenset({"caroline", "melanie"}), meaning) == title(
        MELANIE, frozenset({"caroline", "melanie"})
    )


def test_when_something_happens_never_names_it() -> None:
    notes = items(
        "Mum's hip operation is on 14 October at St Mary's",
        "Visiting Mum every weekend in October after the surgery",
        "Mum walks with a frame since October, physio on Tuesdays",
    )
    assert "October" not in title(notes) and "weekend" not in title(notes).lower()
    assert title(notes).startswith("Mum")


@pytest.mark.usefixtures("minilm")
def test_a_section_of_thousands_of_notes_is_named_from_a_few_dozen_of_them() -> None:
    from memd.engine.titles import TITLE_TEXTS, TITLE_WORDS
    from memd.index.meaning import Meaning

    embedded: list[int] = []

    class Counting(Meaning):
        def vectors(self, texts: Sequence[str]) -> Any:
            embedded.append(len(texts))
            return super().vectors(texts)

    meaning = Counting("minilm-l6", None)
    crops, places = ["tomatoes", "beans", "courgettes"], ["greenhouse", "allotment", "patio"]
    notes = items(*(f"watered the {crops[n % 3]} in the {places[n % 7 % 3]}, picked {n} so far" for n in range(3000)))
    name = title(notes, meaning=meaning)
    assert name and sum(embedded) <= TITLE_TEXTS + TITLE_WORDS
