"""Splitting one huge section: what consolidation pays when a topic's section outgrew the split size.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_split.py                          # sections of 1,000 and 3,000 entries
    python bench/bench_split.py --entries 4000 --against ../old   # side by side with another checkout

A section of chat-like entries (bench_vectors.chat_texts, five speakers) is
cut as topic upkeep cuts it (``upkeep._cut``: by meaning and subject, with the
offline engine and the shipped embedding model) into pieces of at most 1,500
tokens. The entries are embedded before the clock starts, so what is measured
is the cut itself: clustering and naming. Prints CPU seconds (this process),
the pieces made and a digest of them, so two checkouts can be seen to cut
alike. With ``--against DIR`` each size is also run from checkout DIR
(``PYTHONPATH``), in turn, so both see the same load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

TARGET = 1500  # tokens a piece may hold


def cut(entries: int) -> dict[str, object]:
    from bench_vectors import chat_texts

    from memd.consolidation import upkeep
    from memd.core.signature import Signature
    from memd.engine.base import Item, Section
    from memd.engine.offline import OfflineEngine
    from memd.index.meaning import Meaning

    texts = chat_texts(random.Random(7))
    people = ["Caroline", "Melanie", "Jon", "Gina", "Priya"]
    items = tuple(
        Item(Signature.make(n + 1, time="2026-11-20"), f"{people[n % 5]}: {next(texts)}") for n in range(entries)
    )
    meaning = Meaning("minilm-l6", None)
    if not meaning.available:
        raise SystemExit("the embedding model is not installed")
    meaning.vectors([item.text for item in items])
    start = time.process_time()
    pieces = upkeep._cut(OfflineEngine(meaning), Section("Everything", items), TARGET)
    cpu = time.process_time() - start
    shape = repr([(piece.title, [str(item.seqs) for item in piece.items]) for piece in pieces])
    return {"cpu": cpu, "pieces": len(pieces), "digest": hashlib.sha256(shape.encode()).hexdigest()[:12]}


def measured(entries: int, code: str | None) -> dict[str, object]:
    """One cut in a process of its own, from checkout ``code`` (None: this one)."""
    here = Path(__file__).resolve().parent
    path = os.pathsep.join(p for p in (code, str(here), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, __file__, "--one", str(entries)],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", default="1000,3000", help="section sizes, comma-separated")
    parser.add_argument("--against", help="another checkout, run side by side")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(cut(args.one)))
        return
    for entries in (int(n) for n in args.entries.split(",")):
        for name, code in (("this checkout", None), *(((args.against, args.against),) if args.against else ())):
            result = measured(entries, code)
            print(
                f"{entries:,} entries, {name}: {result['cpu']:.2f} s CPU, "
                f"{result['pieces']} pieces (digest {result['digest']})"
            )


if __name__ == "__main__":
    main()
