"""A long chat import consolidated: the CPU of each round, and of `memd verify --full` after it.

Not a test: run by hand and copy the figures into docs/benchmarks.md.

    python bench/bench_long_import.py                      # 40,000 turns, this checkout
    python bench/bench_long_import.py --against HEAD~3     # that revision's code too, one after the other
    python bench/bench_long_import.py --turns 10000 --verify-runs 5
    python bench/bench_long_import.py --keep /tmp/long     # leaves the vaults there, to profile

A chat of ``--turns`` turns (one to three sentences of everyday words each,
seed 11, as bench_import_scale.py makes them) is ingested into a fresh vault
(`memd ingest`), then consolidated by one `memd consolidate` in a process of its
own, which files a long buffer in rounds of 2,000 entries, each committed
before the next. The CPU of each round (user+sys, `getrusage` of that process
at each round's end) is printed, the first apart: it also loads the language
pipeline and the embedding model, which the process then keeps. Then `memd
verify --full` runs ``--verify-runs`` times; the median of its CPU is printed.
With ``--against REV``, the same steps run with that revision's `memd` package
(`PYTHONPATH`), in a vault of its own, after this checkout's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_import_scale import WORDS  # noqa: E402
from revision import extract  # noqa: E402

# Runs one `memd consolidate` in this process, noting the CPU at the end of each round.
_ROUNDS = r"""
import json, resource, sys
from pathlib import Path
from memd.app import Memory
from memd.consolidation import run

def cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime

marks = [cpu()]
one_round = run._with_retries

def timed(*args, **kwargs):
    outcome = one_round(*args, **kwargs)
    marks.append(cpu())
    return outcome

run._with_retries = timed
outcome = Memory.open(Path(sys.argv[1])).consolidate()
print(json.dumps({"marks": marks, "entries": outcome.entries, "topics": len(outcome.new_topics)}))
"""


def chat(turns: int) -> list[dict[str, str]]:
    rng = random.Random(11)
    made = []
    for n in range(turns):
        sentences = [" ".join(rng.choices(WORDS, k=rng.randint(4, 12))) for _ in range(rng.randint(1, 3))]
        text = f"Turn {n}: " + ". ".join(s.capitalize() for s in sentences) + "."
        made.append({"role": "user" if n % 2 == 0 else "assistant", "content": text})
    return made


def child_cpu(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])}: {done.stderr[-500:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.stdout


def measure(name: str, code: Path, folder: Path, data: Path, verify_runs: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(code)
    # Bytecode as an installed package has it: a stale .pyc would be compiled again in every process.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "memd")], check=True, env=env)
    memd = [sys.executable, "-m", "memd"]
    vault = folder / "vault"
    subprocess.run([*memd, "init", str(vault)], env=env, check=True, capture_output=True)
    ingest, _ = child_cpu([*memd, "ingest", str(data)], env, vault)
    total, out = child_cpu([sys.executable, "-c", _ROUNDS, str(vault)], env, vault)
    result = json.loads(out.strip().splitlines()[-1])
    marks = result["marks"]
    rounds = [b - a for a, b in itertools.pairwise(marks)]
    later = rounds[1:]
    verify = [child_cpu([*memd, "verify", "--full"], env, vault)[0] for _ in range(verify_runs)]
    print(f"{name}: ingest {ingest:.1f} s CPU; consolidate {total:.1f} s CPU in all", flush=True)
    print(f"  {result['entries']:,} entries into {result['topics']} topics in {len(rounds)} rounds")
    print(f"  before the first round (imports, opening the vault): {marks[0]:.1f} s")
    print(f"  round 1 (loads the pipeline and the model): {rounds[0]:.1f} s")
    if later:
        print(
            f"  rounds 2-{len(rounds)}: median {statistics.median(later):.2f} s, "
            f"min {min(later):.2f}, max {max(later):.2f} (max/min {max(later) / min(later):.2f})"
        )
        print("  each:", " ".join(f"{r:.1f}" for r in rounds))
    each = ", ".join(f"{v:.2f}" for v in verify)
    print(f"  verify --full: median {statistics.median(verify):.2f} s CPU of {verify_runs} ({each})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=40_000)
    parser.add_argument("--against", metavar="REV", help="also run the memd package at this git revision")
    parser.add_argument("--verify-runs", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", type=Path, help="build the vaults in DIR (new) and leave them there")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memd-long-") as folder:
        root = Path(folder)
        if args.keep:
            args.keep.mkdir(parents=True)
            root = args.keep
        data = root / "chat.json"
        data.write_text(json.dumps(chat(args.turns)), encoding="utf-8")
        codes = {"this checkout": REPO}
        if args.against:
            codes[args.against] = extract(args.against, root / "against")
        for n, (name, code) in enumerate(codes.items()):
            measure(name, code, root / f"run{n}", data, args.verify_runs)


if __name__ == "__main__":
    main()
