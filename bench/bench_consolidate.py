"""Time offline consolidation of a full buffer (default 5,000 tokens).

Usage: python bench/bench_consolidate.py [--tokens 5000] [--repeat 5]

Builds a fresh vault per run with a few existing topics, fills CURRENT with
conversational notes on a dozen subjects until the buffer holds the asked
token count, then times `consolidate()` (rewrite, plan, apply, split, merge,
summaries, no-loss check, journal, writes and the git commit).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from memd.app.init import init_vault
from memd.consolidation.run import consolidate
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.buffer_status import buffer_status

SUBJECTS = {
    "garden": "tomatoes basil seedlings compost watering greenhouse",
    "running": "marathon training knee intervals shoes tempo",
    "cooking": "sourdough recipe oven spices lentils dinner",
    "work": "deadline migration invoices review deploy team",
    "travel": "flight hotel passport itinerary train museum",
    "music": "guitar chords practice concert band songs",
    "family": "sister birthday parents visit kids holiday",
    "health": "doctor allergy sleep vitamins appointment dentist",
    "reading": "novel library author chapter poetry bookclub",
    "money": "budget savings taxes rent insurance receipts",
    "pets": "dog vet walks food leash puppy",
    "home": "kitchen paint furniture repair boiler window",
}
FILLER = "really think maybe today yesterday friend said about great new plan".split()


def fill(vault_root: Path, tokens: int, seed: int) -> int:
    rng = random.Random(seed)
    vault = init_vault(vault_root).vault
    notes: list[NewEntry] = []
    size = 0
    while size < tokens:
        subject, words = rng.choice(list(SUBJECTS.items()))
        text = " ".join(rng.sample(words.split(), 3) + rng.sample(FILLER, 4)).capitalize() + f" ({subject})"
        notes.append(NewEntry(text, f"2026-11-{rng.randint(1, 20):02d}T{rng.randint(7, 22):02d}:00Z"))
        size += len(text.split())
    append_entries(vault, notes)
    return buffer_status(vault).tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    times = []
    for run in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            buffered = fill(root, args.tokens, run)
            vault = init_vault(root).vault
            start = time.perf_counter()
            outcome = consolidate(vault)
            times.append(time.perf_counter() - start)
            print(
                f"run {run + 1}: {buffered} tokens, {outcome.entries} entries -> "
                f"{len(outcome.touched_topics)} topics in {times[-1]:.3f}s"
            )
    print(f"consolidate {args.tokens} tokens: median {statistics.median(times):.3f}s, max {max(times):.3f}s")


if __name__ == "__main__":
    main()
