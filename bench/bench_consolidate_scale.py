"""Consolidation cost against vault size: the same buffer into 10, 100 and 1,000 topics.

Usage: python bench/bench_consolidate_scale.py [--sizes 10,100,1000] [--repeat 5] [--tokens 1000] [--cold] [--indexed]
       python bench/bench_consolidate_scale.py --sizes 10,100 --groupings words,meaning --then-index

For each size a template vault is built once: topics of eight signed entries
each (every topic on its own subject, with words shared across subjects as in
real notes), committed, then consolidated once with a three-entry buffer so
the vault is in its everyday state (whatever memd keeps between runs is
there; topic files date from the day before, as in a vault in use). Each
run copies a template (file times kept), appends the same ~1,000-token
buffer (about half on subjects the first ten topics hold, the rest new)
with the ordinary write path, and measures one `consolidate()`:
CPU seconds of this process (time.process_time) plus its git children
(resource.getrusage(RUSAGE_CHILDREN)). Runs go round the sizes in turn, so
the medians and their ratios are measured side by side. ``--cold`` also
deletes memd's derived routing state before each run (the first run after an
upgrade, or after someone deletes .memd/). ``--indexed`` brings the search
index (and its sentence vectors) up to date after the buffer is written and
before the measured consolidation, as the daemon does after each add: with
``consolidate.grouping = meaning`` (``MEMD_GROUPING=meaning``) consolidation
then takes the buffer's vectors from search instead of embedding them.
``--then-index`` starts from an indexed vault and counts bringing the search
index up to date after the consolidation too (what makes the result
searchable: the buffer's vectors included),
so a grouping that embeds the buffer itself and one that leaves that to search
are compared on the same work. ``--groupings words,meaning`` runs each
grouping in turn in every round (``MEMD_GROUPING``), side by side.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memd.app.init import init_vault
from memd.consolidation.run import consolidate
from memd.core.document import Heading
from memd.core.entry import make_entry
from memd.core.signature import Signature
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.buffer_status import buffer_status
from memd.vault.state import State, write_state
from memd.vault.vault import Vault

ENTRIES_PER_TOPIC = 8
SYLLABLES = "ka lo mi ne ru sa ti vo ze ba do fi gu ha je ko lu ma no pi ra se to vu wi ya zo".split()
# Words every subject uses, in Zipf proportions (a few are everywhere, most are rare), as in real notes.
_SHARED_RNG = random.Random(99)
SHARED = ["".join(_SHARED_RNG.choice(SYLLABLES) for _ in range(4)) for _ in range(3000)]
ZIPF = [1 / rank for rank in range(1, len(SHARED) + 1)]


def subject_words(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice(SYLLABLES) for _ in range(3)) for _ in range(count)]


def sentence(rng: random.Random, own: list[str]) -> str:
    words = rng.sample(own, 3) + rng.choices(SHARED, ZIPF, k=5)
    rng.shuffle(words)
    return " ".join(words).capitalize() + f", number {rng.randint(1000, 9999)}."


def build_template(root: Path, topics: int, indexed: bool = False) -> None:
    """``topics`` topic files written directly (fast), state past their seqs, one commit."""
    vault = init_vault(root).vault
    vault.topics_dir.mkdir(exist_ok=True)
    seq = 0
    for n in range(topics):
        rng = random.Random(n)
        own = subject_words(rng, 8)
        lines = [
            "---",
            f"id: subject-{n:04d}",
            f"summary: {', '.join(own[:3])}",
            "created: 2026-01-01T09:00:00Z",
            "updated: 2026-01-01T09:00:00Z",
            f"tokens: {ENTRIES_PER_TOPIC * 11}",
            "---",
            Heading.make(1, f"{own[0].capitalize()} {own[1]}").raw,
            "",
        ]
        for _ in range(ENTRIES_PER_TOPIC):
            seq += 1
            signature = Signature.make(seq, time=f"2026-01-{rng.randint(1, 28):02d}T10:00:00Z", source="user")
            lines.extend(make_entry(signature, sentence(rng, own)).lines())
        (vault.topics_dir / f"subject-{n:04d}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_state(vault, State(next_seq=seq + 1))
    day_ago = time.time_ns() - 86_400 * 10**9  # the topics were written before today, as in a vault in use
    for path in vault.topics_dir.iterdir():
        os.utime(path, ns=(day_ago, day_ago))
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "topics"], check=True, capture_output=True)
    # One ordinary consolidation, so the vault is as everyday use leaves it.
    append_entries(vault, [NewEntry(sentence(random.Random(7), subject_words(random.Random(0), 8)))] * 3)
    consolidate(vault)
    if indexed:
        _sync_index(vault)


def _sync_index(vault: Vault) -> None:
    from memd.index import IndexStore

    store = IndexStore(vault)
    store.sync()
    store.close()


def buffer_notes(tokens: int) -> list[NewEntry]:
    return [note for note, _ in labelled_notes(tokens)]


def labelled_notes(tokens: int) -> list[tuple[NewEntry, str]]:
    """The buffer's notes, each with its subject: a template topic's id (``subject-0003``)
    or a new subject's name (``new-2``); bench_unread_routing.py scores where they go."""
    rng = random.Random(2024)
    known = [subject_words(random.Random(n), 8) for n in range(10)]
    fresh = [subject_words(random.Random(10_000 + n), 8) for n in range(6)]
    notes: list[tuple[NewEntry, str]] = []
    size = 0
    while size < tokens:
        old = rng.random() < 0.5
        own = rng.choice(known) if old else rng.choice(fresh)
        subject = f"subject-{known.index(own):04d}" if old else f"new-{fresh.index(own)}"
        text = sentence(rng, own)
        notes.append((NewEntry(text, f"2026-02-{rng.randint(1, 27):02d}T{rng.randint(7, 22):02d}:00:00Z"), subject))
        size += len(text.split())
    return notes


def cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def one_run(
    template: Path, work: Path, notes: list[NewEntry], cold: bool, indexed: bool = False, then_index: bool = False
) -> tuple[float, int, int]:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(template, work, symlinks=True)
    vault = init_vault(work).vault
    if cold:
        for path in vault.index_dir.glob("catalog*"):
            path.unlink()
    append_entries(vault, notes)
    if indexed:
        _sync_index(vault)
    tokens = buffer_status(vault).tokens
    start = cpu()
    outcome = consolidate(vault)
    if then_index:
        _sync_index(vault)
    spent = cpu() - start
    return spent, tokens, len(outcome.touched_topics)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--cold", action="store_true", help="delete the derived routing state before each run")
    parser.add_argument("--indexed", action="store_true", help="sync the search index before each measured run")
    parser.add_argument("--then-index", action="store_true", help="count syncing the search index afterwards too")
    parser.add_argument("--groupings", default="", help="e.g. words,meaning: each in turn (MEMD_GROUPING)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    notes = buffer_notes(args.tokens)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        templates = {}
        for size in sizes:
            started = time.perf_counter()
            templates[size] = base / f"template-{size}"
            build_template(templates[size], size, args.indexed or args.then_index)
            print(f"built a vault of {size} topics ({time.perf_counter() - started:.1f} s)", file=sys.stderr)
        groupings = [g for g in args.groupings.split(",") if g] or [os.environ.get("MEMD_GROUPING", "")]
        spent: dict[tuple[str, int], list[float]] = {(g, size): [] for g in groupings for size in sizes}
        for run in range(args.repeat):
            for grouping in groupings:
                if grouping:
                    os.environ["MEMD_GROUPING"] = grouping
                for size in sizes:
                    seconds, tokens, touched = one_run(
                        templates[size], base / "run", notes, args.cold, args.indexed, args.then_index
                    )
                    spent[grouping, size].append(seconds)
                    print(
                        f"run {run + 1}: {grouping or 'default'} {size:>5} topics, buffer {tokens} tokens "
                        f"({len(notes)} entries) -> {touched} topics touched, {seconds:.3f} s CPU",
                        file=sys.stderr,
                    )
    first = statistics.median(spent[groupings[0], sizes[0]])
    print(
        f"\nconsolidate ~{args.tokens} tokens{' (cold: no derived state)' if args.cold else ''}"
        f"{' (search index synced first)' if args.indexed else ''}"
        f"{' (and the index synced after, counted)' if args.then_index else ''}, "
        f"CPU seconds incl. git, median of {args.repeat}:"
    )
    print(f"{'grouping':>9} {'topics':>8} {'median':>8} {'min':>8} {'max':>8} {'ratio':>7}")
    for grouping, size in spent:
        values = spent[grouping, size]
        median = statistics.median(values)
        print(
            f"{grouping or 'default':>9} {size:>8} {median:>8.3f} {min(values):>8.3f} {max(values):>8.3f} "
            f"{median / first:>6.2f}x"
        )


if __name__ == "__main__":
    main()
