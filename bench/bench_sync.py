"""Two devices x 5,000 entries each: how long `memd sync` and `memd verify` take after the merge.

Usage: python bench/bench_sync.py [--entries 5000] [--repeat 3] [--no-consolidate | --same-buffer]

A bare repository on local disk is the remote. The laptop creates the vault
and syncs; the desktop joins with `memd init --from`. Apart, each adds
``--entries`` entries (a dozen subjects per device, a few shared) and, unless
``--no-consolidate``, consolidates them into topics. With ``--same-buffer``
the desktop first pulls the laptop's unconsolidated entries, so both devices
consolidate those same entries (and the desktop its own too) before syncing.
The laptop syncs (a push). Then, ``--repeat`` times on fresh copies of that
moment:

- the desktop syncs: fetch, merge both devices' files entry by entry, push;
- `memd verify` on the desktop (every seq of both devices, the whole history);
- the laptop syncs (a fast-forward) and verifies.

Prints wall and CPU time (this process plus git's) per step, medians over
the repeats, and checks every entry of both devices is live exactly once.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memd import Memory
from memd.app.init import init_vault
from memd.core.document import parse_document
from memd.vault.vault import Vault

SHARED = "coffee running travel".split()
SUBJECTS = {
    "laptop": "violin kayak chess orchid telescope pottery marathon beekeeping origami".split(),
    "desktop": "sourdough climbing knitting aquarium calligraphy tango bonsai surfing fencing".split(),
}
WORDS = (
    "morning evening teacher lesson weekend budget friend sister doctor library river window kitchen garden "
    "notes plan booked bought repaired practised visited learned started finished tried liked"
).split()


def cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(action: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, spent = time.perf_counter(), cpu()
    result = action()
    return time.perf_counter() - wall, cpu() - spent, result


def notes(device: str, count: int) -> list[str]:
    subjects = SUBJECTS[device] + SHARED
    return [
        f"{random.choice(subjects)} {' '.join(random.choices(WORDS, k=9))} ({device} note {n})" for n in range(count)
    ]


def git(path: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)


def live_seqs(vault: Vault) -> Counter[int]:
    counts: Counter[int] = Counter()
    for path in vault.entry_files():
        for located in parse_document(path.read_text(encoding="utf-8")).signed():
            counts.update(located.entry.signature.seq)  # type: ignore[union-attr]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-consolidate", dest="consolidate", action="store_false")
    parser.add_argument("--same-buffer", action="store_true", help="both devices consolidate the laptop's entries")
    args = parser.parse_args()
    random.seed(11)
    with tempfile.TemporaryDirectory(prefix="memd-bench-sync-") as folder:
        tmp = Path(folder)
        subprocess.run(["git", "init", "-q", "--bare", str(tmp / "remote.git")], check=True)
        laptop_vault = init_vault(tmp / "laptop").vault
        git(laptop_vault.root, "remote", "add", "origin", str(tmp / "remote.git"))
        laptop = Memory(laptop_vault)
        laptop.sync()
        desktop = Memory(Memory.init_from(str(tmp / "remote.git"), tmp / "desktop").vault)
        added: dict[str, list[int]] = {}
        for name, memory in (("laptop", laptop), ("desktop", desktop)):
            texts = notes(name, args.entries)
            wall, spent, _ = timed(
                lambda m=memory, t=texts: [m.add(t[i : i + 500]) for i in range(0, len(t), 500)]  # type: ignore[misc]
            )
            text = (memory.vault.root / "CURRENT.md").read_text(encoding="utf-8")
            added[name] = sorted(set(live_seqs(memory.vault)) - set(added.get("laptop", [])))
            print(f"{name}: added {len(added[name])} entries in {wall:.1f} s ({len(text) // 1024} KiB buffer)")
            if args.same_buffer and name == "laptop":
                laptop.sync()
                desktop.sync()  # the laptop's entries arrive in the desktop's buffer
                continue
            if args.consolidate:
                wall, spent, outcome = timed(lambda m=memory: m.consolidate())  # type: ignore[misc]
                print(f"{name}: consolidated into {len(outcome.touched_topics)} topics in {wall:.1f} s")
        if args.same_buffer:
            wall, spent, outcome = timed(laptop.consolidate)
            print(f"laptop: consolidated into {len(outcome.touched_topics)} topics in {wall:.1f} s")
        wall, spent, report = timed(laptop.sync)
        print(f"laptop sync (push {report.pushed} commits): {wall:.2f} s wall, {spent:.2f} s CPU")
        start = tmp / "start"
        for name in ("remote.git", "laptop", "desktop"):
            shutil.copytree(tmp / name, start / name, symlinks=True)

        steps: dict[str, list[tuple[float, float]]] = {}
        for run in range(args.repeat):
            trial = tmp / f"trial-{run}"
            shutil.copytree(start, trial, symlinks=True)
            for name in ("laptop", "desktop"):
                git(trial / name, "remote", "set-url", "origin", str(trial / "remote.git"))
            there, here = Memory(Vault(trial / "desktop")), Memory(Vault(trial / "laptop"))
            for step, action in (
                ("desktop sync (merge)", there.sync),
                ("desktop verify", there.verify),
                ("laptop sync (fast-forward)", here.sync),
                ("laptop verify", here.verify),
            ):
                wall, spent, result = timed(action)
                steps.setdefault(step, []).append((wall, spent))
                if step == "desktop sync (merge)":
                    merged = result
                if step.endswith("verify") and result.problems:
                    sys.exit(f"{step}: {result.problems}")
            for memory in (there, here):
                counts = live_seqs(memory.vault)
                doubled = [s for s, n in counts.items() if n > 1]
                missing = set(added["laptop"] + added["desktop"]) - set(counts)
                if doubled or missing:
                    sys.exit(f"run {run}: {len(doubled)} seqs live twice, {len(missing)} lost")
            shutil.rmtree(trial)
        print(
            f"desktop merge: pulled {merged.pulled} commits, received {merged.received} entries, "
            f"{len(merged.resolved)} automatic resolutions, pushed {merged.pushed} commits"
        )
        print(f"after the merge: {2 * args.entries} entries live once on both devices, verify clean")
        print(f"{'step':<28} {'wall median':>12} {'CPU median':>11}   (all runs, wall)")
        for step, times in steps.items():
            walls = [w for w, _ in times]
            cpus = [c for _, c in times]
            shown = ", ".join(f"{w:.2f}" for w in walls)
            print(f"{step:<28} {statistics.median(walls):>10.2f} s {statistics.median(cpus):>9.2f} s   ({shown})")


if __name__ == "__main__":
    main()
