"""The entry-wise three-way merge of CURRENT.md and topics (memd/sync/merge.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.core.document import parse_document
from memd.sync.diff3 import diff3
from memd.sync.frontmatter import KeyConflict
from memd.sync.merge import merge_documents, merge_frontmatter

HEAD = "# CURRENT\n\nRecent memories.\n\n"


def entry(seq: int | str, text: str) -> str:
    return f"- <seq={seq},time=2026-01-02T03:04Z,source=user> {text}\n"


def topic(name: str, *entries: str, log: tuple[str, ...] = ()) -> str:
    lines = "".join(f'  - "{line}"\n' for line in log)
    front = f"---\nid: {name}\nsummary: about {name}\ntokens: 3\n" + (f"update_log:\n{lines}" if log else "") + "---\n"
    return front + f"# {name.title()}\n" + "".join(entries)


def live(files: dict[str, str | None]) -> list[int]:
    seqs = []
    for text in files.values():
        if text is None:
            continue
        for located in parse_document(text).signed():
            seqs.extend(located.entry.signature.seq)
    return sorted(seqs)


def merged(base: dict[str, str], ours: dict[str, str], theirs: dict[str, str]) -> dict[str, str | None]:
    result = merge_documents(base, ours, theirs)
    assert not result.conflicts, result.conflicts
    out: dict[str, str | None] = dict(ours)
    out.update(result.files)
    return {path: text for path, text in out.items() if text is not None}


def test_diff3_marks_who_changed_what() -> None:
    kinds = [h.kind for h in diff3("abcde", "abXde", "abcdeY")]
    assert kinds == ["stable", "ours", "stable", "theirs"]
    assert [h.kind for h in diff3("abc", "aXc", "aYc")] == ["stable", "conflict", "stable"]
    assert [h.kind for h in diff3("abc", "aXc", "aXc")] == ["stable", "both", "stable"]


def test_appends_on_both_sides_are_all_kept_the_remotes_first() -> None:
    base = {"CURRENT.md": HEAD + entry(1, "one")}
    ours = {"CURRENT.md": base["CURRENT.md"] + entry(1000000001, "mine")}
    theirs = {"CURRENT.md": base["CURRENT.md"] + entry(2000000001, "theirs")}
    text = merged(base, ours, theirs)["CURRENT.md"]
    assert text == HEAD + entry(1, "one") + entry(2000000001, "theirs") + entry(1000000001, "mine")


def test_entries_the_remote_filed_leave_the_buffer_here_too() -> None:
    base = {"CURRENT.md": HEAD + entry(1, "one") + entry(2, "two")}
    ours = {"CURRENT.md": base["CURRENT.md"] + entry(1000000001, "new here")}
    theirs = {"CURRENT.md": HEAD, "topics/numbers.md": topic("numbers", entry(1, "one"), entry(2, "two"))}
    result = merged(base, ours, theirs)
    assert result["CURRENT.md"] == HEAD + entry(1000000001, "new here")
    assert result["topics/numbers.md"] == theirs["topics/numbers.md"]


def test_an_entry_filed_differently_on_both_sides_lives_where_the_remote_put_it() -> None:
    base = {"CURRENT.md": HEAD + entry(1, "coffee with oat milk")}
    ours = {"CURRENT.md": HEAD, "topics/drinks.md": topic("drinks", entry("1+1000000001", "coffee with oat milk"))}
    theirs = {"CURRENT.md": HEAD, "topics/coffee.md": topic("coffee", entry(1, "coffee with oat milk"))}
    result = merge_documents(base, ours, theirs)
    assert not result.conflicts
    files = {**ours, **result.files}
    assert "<seq=1000000001," in files["topics/drinks.md"]  # the fold keeps the seq only it holds
    assert files["topics/coffee.md"] == theirs["topics/coffee.md"]
    assert live(files) == [1, 1000000001]


def test_entries_filed_into_existing_topics_on_both_sides_live_where_the_remote_put_them() -> None:
    # Both devices consolidated the same two buffer entries into topics that existed
    # already. The topic here changed only here, so it was kept whole with the entries
    # the remote's place wins for: every later sync was refused ("would be in two entries").
    violin = topic("violin", entry(1, "Violin lessons with Clara every Friday"))
    vienna = topic("vienna", entry(2, "Oboe reeds come from the Vienna shop"))
    a, b = entry(1000000001, "Duet practice moved to Monday"), entry(1000000002, "Clara bought a new violin bow")
    base = {"CURRENT.md": HEAD + a + b, "topics/violin.md": violin, "topics/vienna.md": vienna}
    ours = {"CURRENT.md": HEAD, "topics/violin.md": violin + b + entry(1000000003, "Friday lesson cancelled")}
    ours["topics/vienna.md"] = vienna + a
    theirs = {"CURRENT.md": HEAD, "topics/violin.md": violin}
    theirs["topics/vienna.md"] = vienna + entry(2000000001, "Vienna shop reeds are cheaper now") + a + b
    result = merged(base, ours, theirs)
    assert live(result) == [1, 2, 1000000001, 1000000002, 1000000003, 2000000001]
    assert "<seq=1000000002," not in result["topics/violin.md"] and "<seq=1000000003," in result["topics/violin.md"]
    assert "tokens: 3" not in result["topics/violin.md"]  # counted again for what it holds now


def test_a_topic_s_summary_stops_quoting_an_entry_the_merge_moved_out() -> None:
    # Both devices filed the same buffer entry; the remote's place wins, and the topic it
    # left here no longer quotes it in its summary (memd list and the topic's page show it).
    violin = topic("violin", entry(1, "Violin lessons with Clara every Friday"))
    vienna = topic("vienna", entry(2, "Oboe reeds come from the Vienna shop"))
    bow = entry(1000000002, "Clara bought a new violin bow")
    base = {"CURRENT.md": HEAD + bow, "topics/violin.md": violin, "topics/vienna.md": vienna}
    summary = "summary: Violin lessons with Clara every Friday · Clara bought a new violin bow"
    ours = {"CURRENT.md": HEAD, "topics/violin.md": (violin + bow).replace("summary: about violin", summary)}
    ours["topics/vienna.md"] = vienna
    theirs = {"CURRENT.md": HEAD, "topics/violin.md": violin, "topics/vienna.md": vienna + bow}
    result = merged(base, ours, theirs)
    assert live(result) == [1, 2, 1000000002]
    mine = result["topics/violin.md"]
    assert mine is not None and "<seq=1000000002," not in mine
    assert parse_document(mine).frontmatter.data["summary"] == "Violin lessons with Clara every Friday"  # type: ignore[union-attr]


def test_a_file_left_with_no_entries_by_the_merge_goes() -> None:
    base = {"CURRENT.md": HEAD + entry(1, "one")}
    ours = {"CURRENT.md": HEAD, "topics/a.md": topic("a", entry(1, "one"))}
    theirs = {"CURRENT.md": HEAD, "topics/b.md": topic("b", entry(1, "one"))}
    result = merge_documents(base, ours, theirs)
    assert result.files["topics/a.md"] is None and "topics/b.md" in result.files


def test_an_entry_edited_here_and_moved_there_keeps_the_edit_where_it_moved() -> None:
    base = {"CURRENT.md": HEAD + entry(1, "coffee with oat milk")}
    ours = {"CURRENT.md": HEAD + entry(1, "coffee with almond milk")}
    theirs = {"CURRENT.md": HEAD, "topics/coffee.md": topic("coffee", entry(1, "coffee with oat milk"))}
    result = merged(base, ours, theirs)
    assert result["CURRENT.md"] == HEAD
    assert "almond milk" in result["topics/coffee.md"] and "oat milk" not in result["topics/coffee.md"]


def test_removed_there_but_changed_here_is_kept() -> None:
    base = {"topics/t.md": topic("t", entry(1, "one"), entry(2, "two"))}
    ours = {"topics/t.md": topic("t", entry(1, "one, corrected"), entry(2, "two"))}
    theirs = {"topics/t.md": topic("t", entry(2, "two"))}
    result = merge_documents(base, ours, theirs)
    assert "one, corrected" in (result.files.get("topics/t.md") or ours["topics/t.md"])
    assert any("changed here; kept" in line for line in result.resolved)


@pytest.mark.parametrize("renamed_here", [False, True])
def test_a_topic_renamed_on_one_device_takes_the_changes_the_other_made_under_its_old_name(renamed_here: bool) -> None:
    base = {
        "CURRENT.md": HEAD + entry(3, "coffee after lunch"),
        "topics/coffee.md": topic("coffee", entry(1, "oat milk")),
    }
    renamed = {"CURRENT.md": base["CURRENT.md"], "topics/my-coffee.md": base["topics/coffee.md"]}
    # The other device adds a note by hand and files seq 3 there.
    edited = {
        "CURRENT.md": HEAD,
        "topics/coffee.md": topic(
            "coffee", "The grinder is on the top shelf.\n", entry(1, "oat milk"), entry(3, "coffee after lunch")
        ),
    }
    ours, theirs = (renamed, edited) if renamed_here else (edited, renamed)

    result = merge_documents(base, ours, theirs)
    files = merged(base, ours, theirs)

    assert sorted(files) == ["CURRENT.md", "topics/my-coffee.md"]  # one topic, under its new name
    assert "grinder is on the top shelf" in files["topics/my-coffee.md"] and live(files) == [1, 3]
    assert any("topics/coffee.md: renamed to topics/my-coffee.md" in line for line in result.resolved)


def test_a_topic_without_an_id_is_known_by_its_seqs_across_a_rename() -> None:
    old = "# Coffee\n" + entry(1, "oat milk") + entry(2, "flat white")
    base = {"topics/coffee.md": old}
    ours = {"topics/drinks.md": old}
    theirs = {"topics/coffee.md": old + entry(3, "decaf after 2pm")}
    assert merged(base, ours, theirs) == {"topics/drinks.md": old + entry(3, "decaf after 2pm")}


def test_the_same_line_changed_differently_is_left_to_the_person() -> None:
    base = {"topics/t.md": topic("t", "Some prose.\n", entry(1, "one"))}
    ours = {"topics/t.md": topic("t", "Some prose, mine.\n", entry(1, "one"))}
    theirs = {"topics/t.md": topic("t", "Some prose, theirs.\n", entry(1, "one"))}
    result = merge_documents(base, ours, theirs)
    assert result.files == {}
    [conflict] = result.conflicts
    assert conflict.path == "topics/t.md" and conflict.line == 7 and "Some prose, mine." in conflict.message


def test_update_logs_are_joined_and_derived_keys_decided() -> None:
    base = {"id": "t", "summary": "s", "tokens": 3, "update_log": ["a"], "owner": "dana"}
    mine = {**base, "summary": "mine", "update_log": ["a", "b"], "updated": "2026-01-02"}
    theirs = {**base, "summary": "theirs", "update_log": ["a", "c"], "updated": "2026-01-03"}
    data = merge_frontmatter(base, mine, theirs)
    assert data["update_log"] == ["a", "b", "c"] and data["summary"] == "theirs" and data["updated"] == "2026-01-03"


def test_related_links_are_memds_and_tags_and_aliases_merge_item_by_item() -> None:
    base = {"id": "t", "related": ["[[a]]"], "tags": ["dana", "old"], "aliases": ["Coffee"]}
    mine = {**base, "related": ["[[b]]"], "tags": ["dana", "mine"], "aliases": ["Coffee", "Flat white"]}
    theirs = {**base, "related": ["[[c]]", "[[a]]"], "tags": ["dana", "old", "sam"], "aliases": ["Coffee"]}
    data = merge_frontmatter(base, mine, theirs)
    assert data["related"] == ["[[c]]", "[[a]]"]  # derived: the remote's
    assert data["tags"] == ["dana", "mine", "sam"]  # "old" was removed here, "sam" added there
    assert data["aliases"] == ["Coffee", "Flat white"]
    with pytest.raises(KeyConflict):  # a person's own key still is theirs to settle
        merge_frontmatter({"owner": "a"}, {"owner": "b"}, {"owner": "c"})


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=8),
    st.data(),
)
def test_every_seq_is_live_once_whatever_each_side_did(count: int, data: st.DataObject) -> None:
    """Both sides file some of the shared buffer (each into its own topic) and
    append new entries; afterwards every seq is live exactly once."""
    shared = list(range(1, count + 1))
    filed_here = data.draw(st.sets(st.sampled_from(shared)) if shared else st.just(set()))
    filed_there = data.draw(st.sets(st.sampled_from(shared)) if shared else st.just(set()))
    new_here = [1000000001 + i for i in range(data.draw(st.integers(0, 3)))]
    new_there = [2000000001 + i for i in range(data.draw(st.integers(0, 3)))]
    base = {"CURRENT.md": HEAD + "".join(entry(s, f"note {s}") for s in shared)}

    def side(filed: set[int], new: list[int], name: str) -> dict[str, str]:
        buffer = HEAD + "".join(entry(s, f"note {s}") for s in shared if s not in filed)
        files = {"CURRENT.md": buffer + "".join(entry(s, f"note {s}") for s in new)}
        if filed:
            files[f"topics/{name}.md"] = topic(name, *(entry(s, f"note {s}") for s in sorted(filed)))
        return files

    result = merged(base, side(filed_here, new_here, "here"), side(filed_there, new_there, "there"))
    assert live(result) == sorted(shared + new_here + new_there)
