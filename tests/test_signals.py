"""Re-ranking signals on candidates that already have a base score."""

from __future__ import annotations

from memd.index.base import Hit
from memd.index.records import Record
from memd.index.signals import asks, replies, speaker_of, speakers


def entry(n: int, text: str, time: str | None = None) -> Hit:
    record = Record(f"topics/chat.md#{n}", "entry", "chat", "topics/chat.md", (), n, n, text, str(n), (n,), time=time)
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


def test_a_turn_asks_when_no_statement_follows_its_question() -> None:
    assert asks("Ana: how often do you go?")
    assert asks("Ana: did you go? so cool!")
    assert asks("Ana: love it. what did you paint? [shares a photo: a photo of a brush.]")
    assert not asks("Ana: did you go? I went on Friday.")
    assert not asks("Ana: great game last night!")
    # A greeting asks nothing in particular, wherever it stands.
    assert not asks("Ana: hey Sam, how's it going? I took a writing class last month and it was so good!")
    assert not asks("Ana: Hey! How have you been?")
    assert asks("Ana: how are you and the kids doing with the new house?")
    assert asks("Ana: what's in this spread? Looks delicious! I made an apple pie for the kids too!")


def test_a_question_near_the_top_brings_its_reply_next() -> None:
    asked, reply, other = (
        entry(5, "Sam: how often do you swim?", "2026-11-02T20:00"),
        entry(6, "Ana: twice a week", "2026-11-02T20:00"),
        entry(9, "x"),
    )
    assert replies([asked, other, reply], depth=3, within=40) == [asked, reply, other]
    # Too far down to bring it, or the reply too far down to be a plausible answer: order kept.
    assert replies([other, asked, reply], depth=1, within=40) == [other, asked, reply]
    assert replies([asked, other, reply], depth=3, within=2) == [asked, other, reply]


def test_only_a_reply_in_the_same_session_by_someone_else_is_brought() -> None:
    def moved(asked: Hit, reply: Hit) -> bool:
        return replies([asked, entry(9, "x"), reply], depth=3, within=40)[1] is reply

    assert moved(
        entry(5, "Sam: how often do you swim?", "2026-11-02T20:00"), entry(6, "Ana: twice a week", "2026-11-02T20:00")
    )
    assert not moved(
        entry(5, "Sam: how often do you swim?", "2026-11-02T20:00"), entry(6, "Ana: twice a week", "2026-11-03T09:00")
    )
    assert not moved(
        entry(5, "Sam: how often do you swim?", "2026-11-02T20:00"), entry(6, "Sam: and you?", "2026-11-02T20:00")
    )
    assert not moved(
        entry(5, "Sam: I swim twice a week.", "2026-11-02T20:00"), entry(6, "Ana: nice", "2026-11-02T20:00")
    )
    assert moved(
        entry(5, "should I switch to the 7am class?", "2026-11-02T20:00"),
        entry(6, "yes, it is never full", "2026-11-02T20:00"),
    )
