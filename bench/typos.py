"""A LoCoMo file with one typo in each question, to measure search on questions
typed in a hurry (``memd/index/spelling.py``).

In each question one word of five letters or more, chosen at random (names
included), gets one edit: a letter dropped, doubled, swapped with the next, or
changed to a key beside it on a QWERTY keyboard. The same seed gives the same file.

Usage: python bench/typos.py ../shared/data/locomo-dev.json /tmp/locomo-typos.json
       memd eval locomo /tmp/locomo-typos.json --no-abstention
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def beside(letter: str, rng: random.Random) -> str:
    """A key next to ``letter`` on its row (the letter itself if it is on none)."""
    for row in ROWS:
        if letter in row:
            at = row.index(letter)
            return rng.choice([row[i] for i in (at - 1, at + 1) if 0 <= i < len(row)])
    return letter


def typo(word: str, rng: random.Random) -> str:
    """``word`` with one edit, never to its first or last letter."""
    at = rng.randrange(1, len(word) - 1)
    kind = rng.choice(("drop", "swap", "change", "double"))
    if kind == "drop":
        return word[:at] + word[at + 1 :]
    if kind == "swap":
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    if kind == "change":
        return word[:at] + beside(word[at].lower(), rng) + word[at + 1 :]
    return word[:at] + word[at] + word[at:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    data = json.loads(args.file.read_text(encoding="utf-8"))
    changed = 0
    for conversation in data:
        for qa in conversation["qa"]:
            words = list(re.finditer(r"[A-Za-z]{5,}", qa["question"]))
            if not words:
                continue
            word = rng.choice(words)
            qa["question"] = qa["question"][: word.start()] + typo(word.group(0), rng) + qa["question"][word.end() :]
            changed += 1
    args.out.write_text(json.dumps(data), encoding="utf-8")
    print(f"{changed} questions with a typo -> {args.out}")


if __name__ == "__main__":
    main()
