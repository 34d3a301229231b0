"""3,000 short notes in made-up words (which the embedding model cannot read), one
`memd add` and one consolidation: how many topics, how big, at what CPU.

Not a test: run by hand and copy the figures into docs/benchmarks.md.

    python bench/bench_unread_notes.py                    # this checkout
    python bench/bench_unread_notes.py --against HEAD~3   # that revision too, side by side

Two sets of "Remember <word> <n>" notes, the words made from 16 syllables (seed 7):
``distinct`` (no two notes share a word but "Remember") and ``shared`` (the words
drawn freely, so many notes share one: 2,132 words for 3,000 notes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from revision import extract

REPO = Path(__file__).resolve().parent.parent

_RUN = r"""
import json, random, sys, tempfile, time
from pathlib import Path
from memd.app.init import init_vault
from memd.consolidation.run import consolidate
from memd.vault.buffer import NewEntry, append_entries

rng = random.Random(7)
syllables = "dro ka li mu ten sor vai qu zel pra ni ost bu reth yal fo".split()
words = []
while len(words) < 3000:
    word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
    if sys.argv[1] == "shared" or word not in words:
        words.append(word)
with tempfile.TemporaryDirectory() as folder:
    vault = init_vault(Path(folder) / "v").vault
    append_entries(vault, [NewEntry(f"Remember {w} {i}", "2026-11-20T10:00") for i, w in enumerate(words)])
    start = time.process_time()
    consolidate(vault, trigger="manual")
    cpu = time.process_time() - start
    sizes = {p.stem: vault.read(p).frontmatter.data["tokens"] for p in vault.topic_files()}
    notes = [stem for stem in sizes if stem.startswith("notes-")]
    others = [size for stem, size in sizes.items() if stem not in notes]
    print(json.dumps({
        "cpu": cpu, "topics": len(sizes), "notes topics": len(notes), "largest": max(sizes.values()),
        "largest other": max(others, default=0), "named": sorted(sizes, key=sizes.get)[-3:],
    }))
"""


def run(code: Path, kind: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(code)
    # Not run from the checkout: `python -c` puts the working folder first on the path.
    command = [sys.executable, "-c", _RUN, kind]
    done = subprocess.run(command, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", metavar="REV", help="also run the memd package at this git revision")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memd-unread-") as folder:
        codes = {"this checkout": REPO}
        if args.against:
            codes[args.against] = extract(args.against, Path(folder) / "against")
        for kind in ("distinct", "shared"):
            for name, code in codes.items():
                print(f"{kind:8} {name:14} {json.dumps(run(code, kind))}", flush=True)


if __name__ == "__main__":
    main()
