"""An editor's stale saves of CURRENT.md while consolidations run: lines filed twice?

Not a test (it races real processes): run by hand and copy the figures.

    python bench/bench_stale_saves.py --seed 3

A fresh vault; an "editor" keeps its own copy of CURRENT.md and, 50 times,
adds one unsigned line ("Car: fix the tyres 63") to it and saves the whole
copy over the file (0.05-0.4 s apart), so every save brings back the lines
memd already adopted and moved; meanwhile two loops run `memd consolidate`.
Then two more consolidations, and the count of lines that stand in more than
one entry, or in more than one file.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

SUBJECTS = ["Garden", "Car", "Dentist", "Bank", "Running", "Kitchen", "Maya", "Holiday", "Boiler", "Cat"]
VERBS = ["check", "fix", "call", "buy", "plan"]
THINGS = ["hose", "tyres", "filling", "card", "shoes", "tap", "gift", "tickets", "pressure", "food"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--lines", type=int, default=50)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    memd = [sys.executable, "-m", "memd"]
    with tempfile.TemporaryDirectory(prefix="memd-stale-") as folder:
        root = Path(folder) / "v"
        subprocess.run([*memd, "init", str(root)], check=True, capture_output=True)
        current = root / "CURRENT.md"
        base = current.read_text()
        lines = [
            f"- {rng.choice(SUBJECTS)}: {rng.choice(VERBS)} the {rng.choice(THINGS)} {i * 7}" for i in range(args.lines)
        ]
        stop = threading.Event()

        def editor() -> None:
            held = base
            for line in lines:
                held += line + "\n"
                scratch = root / "CURRENT.md.editor"
                scratch.write_text(held)
                os.replace(scratch, current)
                time.sleep(rng.uniform(0.05, 0.4))

        def consolidating() -> None:
            while not stop.is_set():
                subprocess.run([*memd, "consolidate"], cwd=root, capture_output=True)

        saving = threading.Thread(target=editor)
        loops = [threading.Thread(target=consolidating) for _ in range(2)]
        saving.start()
        for loop in loops:
            loop.start()
        saving.join()
        stop.set()
        for loop in loops:
            loop.join()
        for _ in range(2):
            subprocess.run([*memd, "consolidate"], cwd=root, capture_output=True)
        entries: Counter[str] = Counter()
        files: defaultdict[str, set[str]] = defaultdict(set)
        for path in [current, *sorted((root / "topics").glob("*.md"))]:
            for text in path.read_text().splitlines():
                found = re.match(r"- (?:<seq=[^>]*> )?(\w+: .*)", text)
                if found:
                    entries[found.group(1)] += 1
                    files[found.group(1)].add(path.name)
        verify = subprocess.run([*memd, "verify"], cwd=root, capture_output=True, text=True).stdout.splitlines()
        twice = sum(1 for count in entries.values() if count > 1)
        spread = sum(1 for where in files.values() if len(where) > 1)
        print(f"seed {args.seed}: {len(entries)} lines; {twice} in more than one entry, {spread} in more than one file")
        print(f"verify: {verify[0] if verify else '?'}")


if __name__ == "__main__":
    main()
