"""Re-ranking signals on candidates that already have a base score."""

from __future__ import annotations

from memd.index.base import Hit
from memd.index.records import Record
from memd.index.signals import speaker_of, speakers


def entry(n: int, text: str) -> Hit:
    record = Record(f"topics/chat.md#{n}", "entry", "chat", "topics/chat.md", (), n, n, text, str(n), (n,))
    return Hit(record, 1.0)


CHAT = [
    (entry(1, "Sam: Ana, you have to try the ramen place on Clarence st"), 1.0),
    (entry(2, "Ana: went last night. way too salty, not going back"), 0.9),
    (entry(3, "Sam: ha, I loved it"), 0.5),
]


def order(scored: list[tuple[Hit, float]]) -> list[int]:
    return [hit.record.line for hit, _ in scored]


def test_what_the_named_speaker_said_comes_before_what_was_said_to_them() -> None:
    assert order(speakers(CHAT, "what did Ana think of the ramen?", 0.2)) == [2, 1, 3]


def test_nothing_changes_when_no_speaker_or_every_speaker_is_named() -> None:
    assert order(speakers(CHAT, "what about the ramen place?", 0.2)) == [1, 2, 3]
    assert order(speakers(CHAT, "did Sam and Ana agree on the ramen?", 0.2)) == [1, 2, 3]


def test_a_speaker_is_a_short_name_before_a_colon() -> None:
    assert speaker_of(entry(1, "Ana: hi").record) == "Ana"
    assert speaker_of(entry(1, "Mary Ann Lee: hi").record) == "Mary Ann Lee"
    assert speaker_of(entry(1, "four words before it: no speaker").record) is None
    assert speaker_of(entry(1, "10:30 meeting moved").record) is None
