"""The patterns git searches with find exactly the seq values holding a seq."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memd.core.signature import SeqSet
from memd.review.pattern import number_range, signature_pattern, superseded_pattern, trailer_pattern

seqs = st.integers(min_value=1, max_value=5000)
seq_sets = st.lists(seqs, min_size=1, max_size=6).map(SeqSet.of)


@given(st.integers(min_value=1, max_value=20000), st.integers(min_value=0, max_value=20000), seqs)
def test_a_number_range_matches_exactly_its_numbers(lo: int, width: int, probe: int) -> None:
    pattern = re.compile(number_range(lo, lo + width) + "$")
    for n in (probe, lo - 1, lo, lo + width, lo + width + 1, probe * 10):
        if n >= 1:
            assert bool(pattern.match(str(n))) == (lo <= n <= lo + width), (lo, width, n)
    unbounded = re.compile(number_range(lo, None) + "$")
    assert bool(unbounded.match(str(probe))) == (probe >= lo)


@given(st.lists(seqs, min_size=1, max_size=3), seq_sets)
def test_a_signature_matches_when_its_value_holds_a_tracked_seq(tracked: list[int], value: SeqSet) -> None:
    line = f"- <seq={value},time=2026-11-20,source=user> text"
    found = re.search(signature_pattern(tracked), line) is not None
    assert found == bool(set(tracked) & set(value))
    message = f"seq 99999 supersedes seq {value}: subject: now 'x'"
    assert (re.search(superseded_pattern(tracked), message) is not None) == bool(set(tracked) & set(value))
    trailer = f"subject\n\nMemd-Seq: {value}\nMemd-Engine: offline"
    assert (re.search(trailer_pattern(tracked), trailer, re.MULTILINE) is not None) == bool(set(tracked) & set(value))


@settings(max_examples=25, deadline=None)
@given(st.lists(seqs, min_size=1, max_size=3), seq_sets)
def test_git_reads_the_pattern_the_same_way(tmp_path_factory, tracked: list[int], value: SeqSet) -> None:  # type: ignore[no-untyped-def]
    # git's own (POSIX extended) regex engine must agree with the reference semantics.
    repo: Path = tmp_path_factory.mktemp("repo")
    run = lambda *args: subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)  # noqa: E731
    run("init", "-q")
    (repo / "t.md").write_text(f"- <seq={value},source=user> text\n")
    run("add", "t.md")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    out = run("log", "--format=%H", f"-G{signature_pattern(tracked)}").stdout.split()
    assert bool(out) == bool(set(tracked) & set(value))
