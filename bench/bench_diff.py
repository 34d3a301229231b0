"""`memd diff` over a change that touches many entries: CPU against the entries touched.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_diff.py                          # 500, 1,000, 2,000 and 4,000 entries
    python bench/bench_diff.py --sizes 1000,8000 --repeat 5
    python bench/bench_diff.py --against HEAD~2         # the code at a revision too, side by side

For each size a vault is written with that many signed entries in topic
files (50 a file, under 5 headings) and committed; then one commit
reorganises them all, as a consolidation that splits and merges topics
does: every entry moves to another file and section, one in ten has its
words changed, one in twenty is folded into the entry before it (a merge).
`Memory.diff("A..B")` over that commit is timed in a child process of its
own (so each version of the code runs in a clean interpreter): CPU seconds
of the call, its git children included; medians of ``--repeat`` runs.
With ``--against REV`` the ``memd`` package at that revision is extracted
(``git archive``) and timed on the same vaults in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from revision import extract

REPO = Path(__file__).resolve().parent.parent
PER_FILE = 50
HEADINGS = 5
WORDS = (
    "garden running cooking travel music family health reading money pets home work tomato lake bike "
    "coffee train passport dentist budget camping starter knee vet flight kyoto atlas deadline"
).split()


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True)
    return done.stdout.strip()


def write_topics(root: Path, entries: list[tuple[str, str]], prefix: str) -> None:
    """``entries`` (seqs, text) into topic files named ``prefix-N``, 50 a file under 5 headings."""
    for old in (root / "topics").glob("*.md"):
        old.unlink()
    for n in range(0, len(entries), PER_FILE):
        lines = ["---", f"id: {prefix}-{n // PER_FILE}", 'summary: "notes"', "---"]
        chunk = entries[n : n + PER_FILE]
        for h in range(HEADINGS):
            lines.append(f"# {prefix.title()} {h}")
            for seqs, said in chunk[h::HEADINGS]:
                lines.append(f"- <seq={seqs},time=2026-03-01T09:00,source=user> {said}")
        (root / "topics" / f"{prefix}-{n // PER_FILE}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def build(root: Path, size: int) -> str:
    """A vault whose last commit reorganises ``size`` entries; returns its ``A..B`` range."""
    from memd.app.init import init_vault

    init_vault(root)
    rng = random.Random(size)
    entries = [(str(seq), " ".join(rng.choices(WORDS, k=8)) + f" ({seq})") for seq in range(1, size + 1)]
    write_topics(root, entries, "before")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    base = git(root, "rev-parse", "HEAD")
    after: list[tuple[str, str]] = []
    for i, (seqs, said) in enumerate(entries):
        if i % 20 == 19 and after:  # folded into the entry before it
            folded, words = after.pop()
            after.append((f"{folded}+{seqs}", words))
            continue
        after.append((seqs, said + " again" if i % 10 == 3 else said))
    rng.shuffle(after)
    write_topics(root, after, "after")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "reorganise")
    return f"{base}..{git(root, 'rev-parse', 'HEAD')}"


def child(vault: str, spec: str) -> dict[str, Any]:
    from memd import Memory

    memory = Memory.open(vault)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.process_time()
    found = memory.diff(spec)
    cpu = time.process_time() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    git_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return {"cpu": cpu + git_cpu, "git": git_cpu, "changes": len(found.entries)}


def timed(code: Path, vault: Path, spec: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code), str(REPO)]))
    args = [sys.executable, __file__, "--child", str(vault), "--range", spec]
    done = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="500,1000,2000,4000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", metavar="REV", help="also time the memd package at this git revision")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--range", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.range)))
        return
    with tempfile.TemporaryDirectory(prefix="memd-diff-") as folder:
        root = Path(folder)
        versions = {"this checkout": REPO}
        if args.against:
            versions = {args.against: extract(args.against, root / "against"), **versions}
        print(f"memd diff over one commit reorganising N entries: CPU seconds, git included, median of {args.repeat}")
        print(" | ".join(["entries", "changes", *versions]))
        for size in (int(s) for s in args.sizes.split(",")):
            vault = root / f"vault-{size}"
            spec = build(vault, size)
            cells: list[str] = []
            changes = 0
            for code in versions.values():
                runs = [timed(code, vault, spec) for _ in range(args.repeat)]
                changes = runs[0]["changes"]
                cells.append(f"{statistics.median(r['cpu'] for r in runs):.3f}")
            print(" | ".join([f"{size:,}", f"{changes:,}", *cells]), flush=True)


if __name__ == "__main__":
    main()
