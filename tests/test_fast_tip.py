"""A long vector build on numpy alone names the faster encoder (``memd[fast]``) once;
with it installed, or for a short build, nothing more is said."""

from __future__ import annotations

import json

import pytest

from memd.cli import output
from memd.vault.vault import Vault

from .conftest import Memd


@pytest.fixture
def numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "fast_installed", lambda: False)


def test_reindex_of_many_texts_on_numpy_alone_names_memd_fast(
    example: Vault, numpy_only: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "FAST_TIP_TEXTS", 10)  # the example vault is small
    result = Memd(example)("reindex")
    assert result.stdout.startswith("indexed ")
    assert result.stderr.count("tip: `pip install 'memd[fast]'` builds vectors faster (embedded ") == 1

    again = Memd(example)("reindex")  # every vector kept: nothing embedded, nothing to say
    assert "tip:" not in again.stderr


def test_reindex_says_nothing_more_when_short_installed_or_json(
    example: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    memd = Memd(example)
    monkeypatch.setattr(output, "fast_installed", lambda: False)
    assert "tip:" not in memd("reindex").stderr  # fewer texts than FAST_TIP_TEXTS

    monkeypatch.setattr(output, "FAST_TIP_TEXTS", 0)
    as_json = memd("reindex", "--json")
    assert "tip:" not in as_json.stderr
    assert json.loads(as_json.stdout)["records"] > 0

    monkeypatch.setattr(output, "fast_installed", lambda: True)
    assert "tip:" not in memd("reindex").stderr


def test_the_search_note_names_memd_fast_only_for_a_long_rest(numpy_only: None) -> None:
    tip = "`pip install 'memd[fast]'` builds vectors faster"
    assert output.finish_hint(False, 600.0) == f"run `memd reindex` to build the rest (about 10 min; {tip})"
    assert output.finish_hint(False, 30.0) == "run `memd reindex` to build the rest (about 1 min)"
    assert output.finish_hint(False, None) == "run `memd reindex` to build the rest"
    assert output.finish_hint(True, 600.0) == "the daemon is building the rest"


def test_with_the_encoder_installed_the_search_note_is_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "fast_installed", lambda: True)
    assert output.finish_hint(False, 600.0) == "run `memd reindex` to build the rest (about 10 min)"
