"""The CPU of each step of each round of a long consolidation, to see which steps
grow with the buffer left and which vary with what a round files.

Not a test: run by hand and copy the figures into docs/benchmarks.md.

    python bench/bench_round_steps.py                  # 40,000 turns, as bench_long_import.py makes them
    python bench/bench_round_steps.py --turns 10000
    python bench/bench_round_steps.py --vault DIR      # a copy of DIR (an ingested, unconsolidated vault)

A chat is ingested into a fresh vault (or ``--vault`` is copied), then one
consolidation runs in this process, which files the buffer in rounds of 2,000
entries. The steps of a round (``memd/consolidation/run.py``'s calls, and a few
methods of the workspace and the journal) are wrapped to add up their CPU
(``time.process_time``, the outermost call of a step only); a table prints each
step's seconds in each round, the steps costing most in rounds 2 on first. The
first round also loads the language pipeline and the model.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_long_import import chat  # noqa: E402

RUN_STEPS = (
    "parse_document drop_stale_copies without_secrets adopt_unsigned without_entries account reworded entries_of "
    "restore file_batch split_topic merge_topics gather_subjects finish_commit batches_of _commit_hand_edits"
).split()


def wrap(owner: Any, name: str, label: str, rounds: list[collections.Counter[str]], stack: list[str]) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        stack.append(label)
        try:
            return original(*args, **kwargs)
        finally:
            stack.pop()
            if label not in stack:
                rounds[-1][label] += time.process_time() - started

    setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=40_000)
    parser.add_argument("--vault", type=Path, help="an ingested vault to copy instead of a new chat")
    args = parser.parse_args()
    from memd.app import Memory
    from memd.consolidation import run
    from memd.consolidation.workspace import Workspace
    from memd.core.document import Document
    from memd.vault import acks

    rounds: list[collections.Counter[str]] = [collections.Counter()]
    stack: list[str] = []
    for name in RUN_STEPS:
        wrap(run, name, name, rounds, stack)
    wrap(run.journal_mod, "apply", "journal.apply", rounds, stack)
    wrap(acks, "pending", "acks.pending", rounds, stack)
    wrap(Document, "render", "Document.render", rounds, stack)
    for method in ("finish", "wrote", "load"):
        wrap(Workspace, method, f"Workspace.{method}", rounds, stack)
    one_round = run._with_retries

    def counted(*a: Any, **k: Any) -> Any:
        started = time.process_time()
        outcome = one_round(*a, **k)
        rounds[-1]["round"] = time.process_time() - started
        rounds.append(collections.Counter())
        return outcome

    run._with_retries = counted  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="memd-steps-") as folder:
        vault = Path(folder) / "vault"
        if args.vault:
            shutil.copytree(args.vault, vault)
        else:
            data = Path(folder) / "chat.json"
            data.write_text(json.dumps(chat(args.turns)), encoding="utf-8")
            memd = [sys.executable, "-m", "memd"]
            subprocess.run([*memd, "init", str(vault)], check=True, capture_output=True)
            subprocess.run([*memd, "ingest", str(data)], cwd=vault, check=True, capture_output=True)
        Memory.open(vault).consolidate()
    rounds.pop()
    steps = sorted({k for r in rounds for k in r} - {"round"}, key=lambda k: -sum(r[k] for r in rounds[1:]))
    print("step                 " + " ".join(f"{n + 1:>5}" for n in range(len(rounds))))
    for step in ["round", *steps]:
        print(f"{step[:20]:20s} " + " ".join(f"{r[step]:5.2f}" for r in rounds))


if __name__ == "__main__":
    main()
