"""`memd verify` on a long history: the full walk, then the incremental one.

Usage: python bench/bench_verify.py [--commits 1000] [--per-commit 3] [--repeat 5]
       python bench/bench_verify.py --commits 100 --per-commit 100 --against HEAD~1 --keep /tmp/v

Builds a vault with ``--commits`` consolidation commits (``--per-commit``
entries each, on rotating subjects), then times, as separate `memd verify`
processes: the full walk (``--full``), and the walk after one more
consolidation (resuming from the checkpoint the previous verify left).
Prints CPU seconds (user+sys of the process and its git children) and wall
seconds, medians of ``--repeat`` runs.

With ``--against REV`` the ``memd`` package at that revision is extracted
(``git archive``) and its ``verify --full`` runs interleaved with this
checkout's over the same vault, in the same run; the ratio of the medians
is printed, and both reports must be the same. ``--keep DIR`` keeps the
built vault there (and reuses it when it already exists).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from revision import extract

from memd import Memory

REPO = Path(__file__).resolve().parent.parent
SUBJECTS = "garden running cooking travel music family health reading money pets home work".split()


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, str, float]:
    """CPU seconds (the process and its git children), wall seconds, what it
    printed, and its peak resident set in MB (the largest of it and its children)."""
    t0 = time.perf_counter()
    # Run from the vault: ``-m`` puts the working folder first on the path, before PYTHONPATH.
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "memd", *args],
            env=env,
            cwd=env["MEMD_VAULT"],
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        printed = out.read().decode("utf-8")
    return usage.ru_utime + usage.ru_stime, wall, printed, usage.ru_maxrss / 1024


def build(root: Path, commits: int, per_commit: int) -> Memory:
    memory = Memory.open(Memory.init(root).vault.root)
    started = time.perf_counter()
    for n in range(commits):
        subject = SUBJECTS[n % len(SUBJECTS)]
        memory.add([f"{subject} note {n}.{k}: {subject} detail {random.randint(0, 10**6)}" for k in range(per_commit)])
        memory.consolidate()
        if (n + 1) % 10 == 0:
            print(f"  built {n + 1} consolidations ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return memory


def report(stdout: str) -> object:
    data = json.loads(stdout)
    return {k: v for k, v in data.items() if k != "commits_checked"} if isinstance(data, dict) else data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--per-commit", type=int, default=3, help="entries added before each consolidation")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", metavar="REV", help="also time verify --full with the memd package at REV")
    parser.add_argument("--keep", metavar="DIR", help="build the vault here (or reuse the one already there)")
    args = parser.parse_args()
    random.seed(3)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep) if args.keep else Path(tmp) / "vault"
        if args.keep and (root / ".memd").exists():
            memory = Memory.open(root)
        else:
            if root.exists():
                shutil.rmtree(root)
            memory = build(root, args.commits, args.per_commit)
        env = {**os.environ, "MEMD_VAULT": str(memory.vault.root)}
        print(f"vault: {root}", file=sys.stderr)
        if args.against:
            code = extract(args.against, Path(tmp) / "against")
            old_env = {**env, "PYTHONPATH": os.pathsep.join([str(code), env.get("PYTHONPATH", "")])}
            old_runs, new_runs = [], []
            for _ in range(args.repeat):
                old_runs.append(timed(["verify", "--full", "--json"], old_env))
                new_runs.append(timed(["verify", "--full", "--json"], env))
            same = all(report(o[2]) == report(n[2]) for o, n in zip(old_runs, new_runs, strict=True))
            old_cpu = statistics.median(r[0] for r in old_runs)
            new_cpu = statistics.median(r[0] for r in new_runs)
            for label, runs in ((args.against, old_runs), ("this checkout", new_runs)):
                cpu = statistics.median(r[0] for r in runs)
                wall = statistics.median(r[1] for r in runs)
                peak = statistics.median(r[3] for r in runs)
                print(
                    f"verify --full, {label:<16} CPU {cpu:.2f} s, wall {wall:.2f} s, "
                    f"peak RSS {peak:.0f} MB (median of {len(runs)})"
                )
            print(f"CPU ratio {args.against} / this checkout: {old_cpu / new_cpu:.2f}; same reports: {same}")
            print(f"report: {new_runs[-1][2].strip()}")
            return
        full = [timed(["verify", "--full"], env) for _ in range(args.repeat)]
        incremental = []
        for _ in range(args.repeat):
            memory.add("one more note about the garden shed")
            memory.consolidate()
            incremental.append(timed(["verify"], env))
        for label, runs in (("verify --full", full), ("verify after one new consolidation", incremental)):
            cpu = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            print(f"{label:<36} {args.commits} commits: CPU {cpu:.2f} s, wall {wall:.2f} s (median of {len(runs)})")


if __name__ == "__main__":
    main()
