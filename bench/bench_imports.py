"""What the everyday commands spend importing: `memd add`, `memd status`, `memd --version`.

Usage: python bench/bench_imports.py [--repeat 9]

Runs each command as its own process with ``python -X importtime`` in a
scratch vault and sums the self time of every import (interpreter start-up
included, and apart: what is imported after ``site``). Prints medians and
minimums of ``--repeat`` runs, and any heavy module (Whoosh, tantivy, the model
client, the MCP SDK) the command imported.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HEAVY = ("whoosh", "tantivy", "openai", "mcp")
_LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|( *)(\S+)")


def imports(vault: Path, args: list[str]) -> tuple[float, float, set[str]]:
    """Seconds importing in all, seconds after interpreter start-up, heavy modules imported."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memd", "--vault", str(vault), *args],
        cwd=vault,  # not the checkout: ``-m`` would import the memd found there first
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    total = after = 0
    started = False
    heavy = set()
    for line in err.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        spent, depth, name = int(match.group(1)), len(match.group(2)), match.group(3)
        total += spent
        after += spent if started else 0
        started = started or (name == "site" and depth == 1)
        heavy |= {h for h in HEAVY if name == h or name.startswith(h + ".")}
    return total / 1e6, after / 1e6, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        subprocess.run([sys.executable, "-m", "memd", "init", str(vault)], check=True, capture_output=True, cwd=tmp)
        print(f"import time (s), median (min) of {args.repeat} runs:")
        for command in (["add", "a note"], ["status"], ["--version"]):
            runs = [imports(vault, command) for _ in range(args.repeat)]
            total, after = [r[0] for r in runs], [r[1] for r in runs]
            heavy = sorted(set().union(*(r[2] for r in runs)))
            print(
                f"  memd {command[0]:<10} all {statistics.median(total):.3f} ({min(total):.3f})"
                f"   after start-up {statistics.median(after):.3f} ({min(after):.3f})"
                f"   heavy modules: {', '.join(heavy) or 'none'}"
            )


if __name__ == "__main__":
    main()
