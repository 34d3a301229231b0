"""The one loop every model call goes through (engine steps, the ask agent's
answer): ``until_valid`` asks again with the reason, or with more room."""

from __future__ import annotations

import pytest

from memd.engine.output import BadOutput, Reply, parse_json
from memd.engine.steps import NoValidReply, until_valid

QUESTION = [{"role": "system", "content": "Reply with JSON."}, {"role": "user", "content": "Name a colour."}]


class Model:
    """Replies in turn with what it was given, and keeps what it was asked."""

    def __init__(self, *replies: tuple[str, str]) -> None:
        self.replies = list(replies)
        self.asked: list[tuple[list[dict[str, str]], int]] = []

    def __call__(self, messages: list[dict[str, str]], limit: int) -> Reply:
        self.asked.append((messages, limit))
        text, finish = self.replies.pop(0)
        return Reply(text, finish, 10, 10)


def colour(text: str) -> str:
    value = parse_json(text).get("colour")
    if not isinstance(value, str):
        raise BadOutput('"colour" must be text')
    return value


def test_an_invalid_reply_is_sent_back_with_the_reason_once() -> None:
    model = Model(('{"color": "red"}', "stop"), ('{"colour": "red"}', "stop"))
    assert until_valid(model, QUESTION, colour, limit=50, context=4000) == "red"
    again = model.asked[1][0]
    assert again[2] == {"role": "assistant", "content": '{"color": "red"}'}
    assert again[3]["content"].startswith('That reply was not valid: "colour" must be text.')


def test_a_reply_cut_at_the_limit_is_asked_again_with_more_room() -> None:
    model = Model(('{"colour": "re', "length"), ('{"colour": "red"}', "stop"))
    assert until_valid(model, QUESTION, colour, limit=50, context=4000) == "red"
    assert [limit for _, limit in model.asked] == [50, 100]


def test_two_unusable_replies_give_the_last_reason() -> None:
    model = Model(("no json here", "stop"), ('{"colour": 3}', "stop"))
    with pytest.raises(NoValidReply, match='"colour" must be text') as raised:
        until_valid(model, QUESTION, colour, limit=50, context=4000)
    assert raised.value.cause == "invalid reply"
    cut = Model(('{"colour": "re', "length"))
    with pytest.raises(NoValidReply, match="stopped at the length limit"):
        until_valid(cut, QUESTION, colour, limit=50, context=60)  # no room to ask for more
