"""Time history review on a long history: `memd history` and `--as-of` search.

Usage: python bench/bench_history.py [--commits 1000] [--keep DIR] [--samples 30]

Builds a vault through real consolidations (each commit: a few notes on a
dozen subjects, now and then a statement that supersedes an earlier one; topics
split as they grow), one hour apart, then times the commands as a user runs
them (`python -m memd ...` in a subprocess, interpreter start-up included):
- `memd history SEQ --json` for seqs spread over the whole history;
- `memd search QUERY --as-of DATE --json`, cold (the first query at a date
  writes its snapshot and builds its index) and warm.
Wall times are p50/p95; CPU is user+system of the command and its git
children. With --keep DIR the vault is built once into DIR and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memd.app.init import init_vault
from memd.consolidation.run import consolidate
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.vault import Vault

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_consolidate import FILLER, SUBJECTS
from percentiles import percentile

START = datetime(2026, 1, 1, tzinfo=UTC)
REPO = Path(__file__).resolve().parent.parent


def stamp(i: int) -> str:
    return (START + timedelta(hours=i)).strftime("%Y-%m-%dT%H:%M:%SZ")


def build(root: Path, commits: int) -> None:
    rng = random.Random(11)
    vault = init_vault(root).vault
    started = time.perf_counter()
    for i in range(commits):
        for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "MEMD_NOW"):
            os.environ[name] = stamp(i)
        notes = []
        for _ in range(4):
            subject, words = rng.choice(list(SUBJECTS.items()))
            text = " ".join(rng.sample(words.split(), 3) + rng.sample(FILLER, 4)).capitalize()
            notes.append(NewEntry(f"{text} ({subject} {i})"))
        if i % 10 == 0:
            subject = rng.choice(list(SUBJECTS))
            notes.append(NewEntry(f"The {subject} budget is {rng.randint(10, 999)} euros"))
        append_entries(vault, notes)
        consolidate(vault)
        if (i + 1) % 100 == 0:
            print(f"  built {i + 1} consolidations in {time.perf_counter() - started:.0f}s", flush=True)
    for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "MEMD_NOW"):
        os.environ.pop(name, None)


def consolidations(root: Path) -> int:
    out = subprocess.run(["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith("consolidate:"))


def timed(args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the process and its children), stdout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "memd", *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"memd {' '.join(args)} failed: {result.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout


def loose_objects(root: Path) -> int:
    out = subprocess.run(["git", "-C", str(root), "count-objects", "-v"], capture_output=True, text=True).stdout
    return int(next(line.split()[1] for line in out.splitlines() if line.startswith("count:")))


def history_latency(root: Path, seqs: list[int], label: str) -> None:
    walls, cpus, steps = [], [], []
    for seq in seqs:
        wall, cpu, out = timed(["--vault", str(root), "history", str(seq), "--json"])
        walls.append(wall)
        cpus.append(cpu)
        steps.append(len(json.loads(out)["steps"]))
    report(f"{label} ({min(steps)}-{max(steps)} steps each)", walls, cpus)
    slowest = seqs[walls.index(max(walls))]
    print(f"  slowest: seq {slowest} of {max(seqs)}")


def report(label: str, walls: list[float], cpus: list[float]) -> None:
    print(
        f"{label}: p50 {percentile(walls, 0.5) * 1000:.0f} ms, p95 {percentile(walls, 0.95) * 1000:.0f} ms, "
        f"max {max(walls) * 1000:.0f} ms; CPU p50 {percentile(cpus, 0.5) * 1000:.0f} ms, "
        f"p95 {percentile(cpus, 0.95) * 1000:.0f} ms "
        f"({len(walls)} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="build the vault here once and reuse it")
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    tmp = None
    if args.keep is None:
        tmp = tempfile.TemporaryDirectory()
        root = Path(tmp.name) / "vault"
    else:
        root = args.keep
    if not (root / ".memd").is_dir() or consolidations(root) != args.commits:
        if root.exists() and any(root.iterdir()):
            raise SystemExit(f"{root} exists and is not a {args.commits}-consolidation bench vault")
        print(f"building a vault with {args.commits} consolidation commits ...", flush=True)
        build(root, args.commits)
    vault = Vault(root)
    top = json.loads(timed(["--vault", str(root), "status", "--json"])[2])["next_seq"] - 1
    topics = len(vault.topic_files())
    print(f"vault: {consolidations(root)} consolidations, {top} seqs, {topics} topics")

    seqs = sorted({max(1, round(top * k / (args.samples - 1))) for k in range(args.samples)})
    loose = loose_objects(root)
    history_latency(root, seqs, f"memd history SEQ, as built ({loose} loose objects)")
    with tempfile.TemporaryDirectory() as spare:
        # git packs a repository now and then (`git gc --auto`); a packed one
        # reads old versions of a topic far faster than loose objects.
        packed = Path(spare) / "vault"
        shutil.copytree(root, packed, symlinks=True)
        subprocess.run(["git", "-C", str(packed), "gc", "-q"], check=True)
        history_latency(packed, seqs, "memd history SEQ, after git gc")

    base = ["--vault", str(root), "search", "budget euros", "--json", "--as-of"]
    dates = [stamp(round(args.commits * k / 4)) for k in (1, 2, 3)]
    shutil.rmtree(root / ".memd" / "index" / "asof", ignore_errors=True)  # cold means cold, also on a kept vault
    cold, cold_cpu = [], []
    for date in dates:
        wall, cpu, _ = timed([*base, date])
        cold.append(wall)
        cold_cpu.append(cpu)
    report("search --as-of DATE, first query at a date (snapshot + index build)", cold, cold_cpu)
    warm, warm_cpu = [], []
    for i in range(args.samples):
        wall, cpu, out = timed([*base, dates[i % len(dates)]])
        assert json.loads(out), "as-of search found nothing"
        warm.append(wall)
        warm_cpu.append(cpu)
    report("search --as-of DATE, later queries", warm, warm_cpu)
    now, now_cpu = [], []
    for _ in range(min(args.samples, 10)):
        wall, cpu, _ = timed(["--vault", str(root), "search", "budget euros", "--json"])
        now.append(wall)
        now_cpu.append(cpu)
    report("search (today's vault, for comparison)", now, now_cpu)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
