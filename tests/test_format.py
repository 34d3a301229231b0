"""The vault format: signatures, seq values and the lossless document round trip."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from memd.core.document import Frontmatter, Heading, Line, parse_document
from memd.core.entry import Entry
from memd.core.errors import FormatError
from memd.core.signature import SeqSet, Signature
from memd.core.signature_text import decode_value, encode_value

# --- signatures -------------------------------------------------------------


def test_signature_parses_keys_in_order_and_renders_back() -> None:
    raw = "<seq=12+41-43,time=2026-11-21T08:00,source=user,src=sources/chat.md#L12,mood=calm>"
    signature = Signature.parse(raw)
    assert str(signature.seq) == "12+41-43"
    assert list(signature.seq) == [12, 41, 42, 43]
    assert signature.time == "2026-11-21T08:00"
    assert signature.source == "user"
    assert signature.src == "sources/chat.md#L12"
    assert signature.extra == (("mood", "calm"),)
    assert signature.render() == raw


def test_values_with_separators_are_escaped_and_come_back() -> None:
    signature = Signature.make(7, source="import:notes", extra=[("title", "a,b=c>d\nnext line")])
    raw = signature.render()
    assert raw == "<seq=7,source=import:notes,title=a%2Cb%3Dc%3Ed%0Anext line>"
    assert Signature.parse(raw) == signature


@pytest.mark.parametrize(
    ("value", "encoded"),
    [("50%", "50%"), ("%2C literally", "%252C literally"), ("100%%", "100%%"), ("%25", "%2525"), ("%2c", "%2c")],
)
def test_percent_is_escaped_only_where_it_would_be_misread(value: str, encoded: str) -> None:
    assert encode_value(value) == encoded
    assert decode_value(encoded) == value


@given(st.text())
def test_any_value_survives_encoding(value: str) -> None:
    assert decode_value(encode_value(value)) == value
    assert not {",", "=", ">", "\n"} & set(encode_value(value))


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("<time=2026-01-01,seq=1>", "must start with seq"),
        ("<seq=0>", "invalid seq"),
        ("<seq=abc>", "invalid seq"),
        ("<seq=012>", "invalid seq"),
        ("<seq=5-3>", "end must exceed start"),
        ("<seq=3+2-4>", "names a seq twice"),
        ("<seq=1,source=a,source=b>", "duplicate signature key"),
        ("<seq=1, time=2026>", "invalid signature key"),
        ("<seq=1,novalue>", "has no '='"),
    ],
)
def test_malformed_signatures_are_rejected_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(FormatError, match=reason):
        Signature.parse(raw)


def test_seq_sets_compress_and_measure() -> None:
    seqs = SeqSet.of([7, 3, 1, 2, 9, 8])
    assert str(seqs) == "1-3+7-9"
    assert len(seqs) == 6
    assert (seqs.first, seqs.last) == (1, 9)
    assert SeqSet.parse(str(seqs)) == seqs


# --- documents --------------------------------------------------------------

HAND_EDITED = """\
---
id: "coffee"
summary: "coffee and food"
my_own_key: [1, 2]
created: 2026-11-20T09:12:00Z
---
# Coffee
Some prose a person wrote.

- <seq=12,time=2026-11-20T09:12,source=user> Takes coffee with oat milk.
-  <seq=13,source=ai,weird=x%3Dy>   spaced oddly
  and a continuation line
* unsigned hand entry
- <seq=oops> malformed signature stays a line
   - nested item after prose

```
- <seq=99> inside a code block is not an entry
```
## Allergies
- <seq=44,time=2026-11-21T10:29,source=user> Allergic to peanuts
"""


def test_hand_edited_document_round_trips_byte_for_byte() -> None:
    document = parse_document(HAND_EDITED)
    assert document.render() == HAND_EDITED
    assert document.frontmatter is not None
    assert list(document.frontmatter.data) == ["id", "summary", "my_own_key", "created"]


def test_entries_know_their_lines_headings_and_text() -> None:
    document = parse_document(HAND_EDITED)
    entries = document.entries()
    signed = [(e.line, str(e.entry.signature.seq), e.headings) for e in entries if e.entry.signature]
    assert signed == [(10, "12", ("Coffee",)), (11, "13", ("Coffee",)), (21, "44", ("Coffee", "Allergies"))]
    spaced = entries[1]
    assert spaced.end_line == 12
    assert spaced.entry.full_text == "spaced oddly\nand a continuation line"
    assert [e.entry.text for e in entries if e.entry.signature is None] == ["unsigned hand entry"]
    assert [line for line, _ in document.problems] == [14]


def test_bom_and_crlf_files_round_trip() -> None:
    text = "\ufeff---\r\nid: x\r\n---\r\n# T\r\n- <seq=1> a\r\n"
    document = parse_document(text)
    assert document.render() == text
    assert document.frontmatter is not None and document.frontmatter.data == {"id": "x"}
    assert [e.entry.text for e in document.entries()] == ["a"]


def test_a_file_of_mixed_line_endings_is_read_line_by_line() -> None:
    # One Windows line in a Unix file: splitting the whole file on CRLF made every
    # other line part of one, and the entries and the frontmatter in it vanished.
    text = "---\nid: x\n---\n# T\n- <seq=1> a\n- <seq=2> b\r\n- <seq=3> c\n"
    document = parse_document(text)
    assert document.frontmatter is not None and document.frontmatter.data == {"id": "x"}
    assert [e.entry.text for e in document.entries()] == ["a", "b", "c"]
    assert document.render() == text.replace("\r\n", "\n")  # written back in the file's usual ending
    mostly_windows = parse_document(text.replace("\n", "\r\n").replace("b\r\r\n", "b\n"))
    assert [e.entry.text for e in mostly_windows.entries()] == ["a", "b", "c"] and mostly_windows.newline == "\r\n"


@given(
    st.lists(
        st.tuples(st.sampled_from(["- <seq=1> a", "# H", "plain words", "", "  continued"]), st.booleans()),
        max_size=12,
    )
)
def test_every_line_is_a_line_whatever_its_ending(lines: list[tuple[str, bool]]) -> None:
    text = "".join(line + ("\r\n" if crlf else "\n") for line, crlf in lines)
    document = parse_document(text)
    assert document.render().replace("\r\n", "\n") == text.replace("\r\n", "\n")


def test_frontmatter_written_by_memd_quotes_strings_and_keeps_order() -> None:
    frontmatter = Frontmatter.from_data({"id": "x", "summary": "yes: no, #1", "tokens": 3, "tags": ["a"]})
    assert frontmatter.lines[:2] == ('id: "x"', 'summary: "yes: no, #1"')
    assert Frontmatter(frontmatter.lines).data == {"id": "x", "summary": "yes: no, #1", "tokens": 3, "tags": ["a"]}


def test_one_datetime_in_two_keys_is_written_twice_not_as_an_alias() -> None:
    from datetime import UTC, datetime

    moment = datetime(2026, 11, 21, 10, 30, tzinfo=UTC)
    frontmatter = Frontmatter.from_data({"created": moment, "updated": moment})
    assert frontmatter.lines == ("created: 2026-11-21T10:30:00Z", "updated: 2026-11-21T10:30:00Z")
    assert Frontmatter(frontmatter.lines).data == {"created": moment, "updated": moment}


# Hand-edit noise: prose, blank lines, unsigned lists, malformed signatures,
# odd spacing, code, HTML and tables. None of them may be altered or lost.
NOISE_LINES = st.sampled_from(
    [
        "",
        "Some prose.",
        "  indented prose",
        "* unsigned item",
        "- [ ] a task",
        "- <seq=x> broken",
        "- <seq=1",
        "<!-- a comment -->",
        "| a | b |",
        "#hashtag not a heading",
        "####### seven hashes",
        "---",
        "```",
        "\t- tabbed item",
        "- <seq=3,time=2026-01-01>   extra  spaces  ",
        "+ <seq=4+6-9,src=a%2Cb> plus marker",
        "# Heading ##",
        "Trailing spaces   ",
    ]
)


@given(
    st.lists(NOISE_LINES | st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=30)),
    st.booleans(),
    st.booleans(),
)
@settings(max_examples=300)
def test_any_text_renders_back_exactly(lines: list[str], final_newline: bool, crlf: bool) -> None:
    newline = "\r\n" if crlf else "\n"
    text = newline.join(lines) + (newline if final_newline and lines else "")
    assert parse_document(text).render() == text


# Generated documents: parse(render(doc)) == doc.
KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(lambda k: k not in {"seq", "time", "source", "src"})
VALUES = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20)
WORDS = st.from_regex(r"[A-Za-z][A-Za-z0-9 ,.'()%=>-]{0,40}", fullmatch=True).map(str.strip).filter(bool)


@st.composite
def signatures(draw: st.DrawFn) -> Signature:
    seqs = draw(st.lists(st.integers(1, 10_000), min_size=1, max_size=6, unique=True))
    return Signature.make(
        SeqSet.of(seqs),
        time=draw(st.none() | st.just("2026-11-21T10:29:00Z") | st.just("2026-11-20")),
        source=draw(st.none() | st.sampled_from(["user", "ai", "hand", "import:locomo"])),
        src=draw(st.none() | VALUES),
        extra=draw(st.lists(st.tuples(KEYS, VALUES), max_size=3, unique_by=lambda kv: kv[0])),
    )


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    signature = draw(st.none() | signatures())
    text = draw(WORDS)
    continuation = tuple("  " + line for line in draw(st.lists(WORDS, max_size=2)))
    marker = draw(st.sampled_from("-*+"))
    if signature is None:
        return Entry(text, None, continuation, marker, " ", "")
    pad, sep = draw(st.sampled_from([" ", "  "])), draw(st.sampled_from([" ", "\t"]))
    return Entry(text, signature, continuation, marker, pad, sep)


PROSE = st.sampled_from(["", "Plain prose.", "A line with <b>html</b>.", "| table | row |"]).map(Line)
HEADINGS = st.builds(Heading.make, st.integers(1, 6), WORDS)
FRONTMATTER = st.none() | st.dictionaries(KEYS, VALUES | st.integers() | st.lists(VALUES, max_size=3), max_size=4).map(
    Frontmatter.from_data
)


@given(FRONTMATTER, st.lists(entries() | PROSE | HEADINGS, max_size=12), st.booleans())
@settings(max_examples=300)
def test_generated_documents_survive_parse_of_render(frontmatter, blocks, final_newline) -> None:  # type: ignore[no-untyped-def]
    from memd.core.document import Document

    # "a\n" is both [a] + final newline and [a, ""] without one; the parser
    # reads the first, so documents are generated in that canonical form.
    if blocks and blocks[-1] == Line(""):
        final_newline = True
    document = Document(tuple(blocks), frontmatter, final_newline=final_newline and bool(blocks or frontmatter))
    text = document.render()
    assert parse_document(text) == document
    assert parse_document(text).render() == text


# --- rendering --------------------------------------------------------------


def test_signature_is_visible_text_when_rendered_as_markdown() -> None:
    entry = "- <seq=12+41-43,time=2026-11-20T09:12,source=user,src=sources/a.md#L3> Takes coffee with oat milk.\n"
    html = MarkdownIt("commonmark").render(entry)
    # Escaped as text: neither swallowed as an HTML tag nor turned into a link.
    assert "&lt;seq=12+41-43,time=2026-11-20T09:12,source=user,src=sources/a.md#L3&gt; Takes coffee" in html
    assert "<a " not in html


@given(signatures())
def test_a_hit_prints_the_signature_its_entry_was_written_with(signature: Signature) -> None:
    # A served search's process writes signatures from the hits' fields, without Signature.
    from memd.cli.output import signature as printed

    hit = {
        "seq": str(signature.seq),
        "time": signature.time,
        "source": signature.source,
        "src": signature.src,
        "meta": dict(signature.extra),
    }
    assert printed(hit) == signature.render()


def test_within_shared_signatures_one_written_signature_is_parsed_once() -> None:
    from memd.core.signature import shared_signatures

    raw = "<seq=5,time=2026-12-06T15:36:03Z,source=import:chat,src=sources/chat.md#^t5>"
    assert Signature.parse(raw) is not Signature.parse(raw)
    with shared_signatures():
        first = Signature.parse(raw)
        with shared_signatures():  # nested: the outer scope's signatures
            assert Signature.parse(raw) is first
        assert Signature.parse(raw) is first and first.seq == SeqSet.parse("5")
        with pytest.raises(FormatError):  # a malformed one raises each time, never kept
            Signature.parse("<seq=0>")
        with pytest.raises(FormatError):
            Signature.parse("<seq=0>")
    assert Signature.parse(raw) is not first  # nothing kept once the scope ends
