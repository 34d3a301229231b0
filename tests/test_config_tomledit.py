"""Editing one key of a TOML text: the parsed result changes in exactly that
key, and every other line stays as it was."""

from __future__ import annotations

import tomllib

import pytest

from memd.core.config import CONFIG_TEMPLATE
from memd.core.errors import ConfigError
from memd.core.tomledit import find_key, set_key

SAMPLE = """\
# top comment
[a]
x = 1          # the x
s = "has # hash and \\" quote"   # trailing
# y = 5        # commented example

[b]
z = 'literal'
"""


@pytest.mark.parametrize(
    ("table", "key", "value"),
    [
        ("a", "x", 2),
        ("a", "s", "new"),
        ("a", "y", 7),
        ("a", "w", "added"),
        ("b", "z", "changed"),
        ("c", "n", 3),
        ("b", "quote", 'a "b" \\ c\tnewline\nend'),
    ],
)
def test_only_the_one_key_changes(table: str, key: str, value: str | int) -> None:
    expected = tomllib.loads(SAMPLE)
    expected.setdefault(table, {})[key] = value
    edited = set_key(SAMPLE, table, key, value)
    assert tomllib.loads(edited) == expected
    assert "# top comment" in edited and "# the x" in edited


def test_trailing_comments_keep_their_column() -> None:
    edited = set_key(SAMPLE, "a", "x", 12345)
    assert "x = 12345      # the x" in edited.splitlines()


def test_a_new_key_goes_after_the_last_assignment_of_its_table() -> None:
    lines = set_key(SAMPLE, "a", "w", 1).splitlines()
    assert lines[lines.index("w = 1") - 1].startswith("s = ")


def test_crlf_and_a_missing_final_newline_are_handled() -> None:
    text = "[a]\r\nx = 1"
    edited = set_key(text, "a", "y", 2)
    assert edited == "[a]\r\nx = 1\r\ny = 2\r\n"
    assert set_key("", "a", "x", 1) == "[a]\nx = 1\n"


def test_values_it_cannot_rewrite_are_refused() -> None:
    with pytest.raises(ConfigError, match="edit it by hand"):
        set_key("[a]\nx = [1, 2]\n", "a", "x", 3)


def test_find_key_prefers_the_real_assignment_over_a_commented_one() -> None:
    text = '[llm]\n# model = "a"\nmodel = "b"\n'
    where = find_key(text, "llm", "model")
    assert where is not None and (where.line, where.commented) == (3, False)
    where = find_key(CONFIG_TEMPLATE, "llm", "model")
    assert where is not None and where.commented
    assert find_key(CONFIG_TEMPLATE, "git", "model") is None
