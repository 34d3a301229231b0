"""Processes the write-safety tests run side by side: adders, a consolidation
loop and an editor that saves files the way real editors do.

Run as ``python -m tests.workers ROLE VAULT ...`` from the repository root.
Each worker stops by itself (a bounded count or a deadline).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

VOCABULARY = (
    "apple river stone cloud maple copper violet ember harbor willow falcon cedar lantern meadow quartz "
    "saffron tundra velvet walnut yarrow zephyr basil cobalt dune fennel garnet hazel indigo juniper kelp "
    "lilac marble nutmeg orchid pepper quince raven sable thistle umber vortex wren"
).split()


def adder(vault: str, name: str, count: int, out: str) -> None:
    """Add ``count`` entries; write every acknowledged one (seq, text) to ``out``."""
    from memd import Memory
    from memd.core.errors import MemdError

    memory = Memory.open(vault)
    acknowledged = []
    for n in range(count):
        # Distinct words per entry, so consolidation has no duplicates to fold.
        text = f"{name} {n}: " + " ".join(random.sample(VOCABULARY, 6))
        try:
            [added] = memory.add(text).added
        except MemdError as err:  # a refused write is a failure the test reports
            print(f"{name}: {err}", file=sys.stderr)
            continue
        acknowledged.append({"seq": added.seq, "text": text})
        time.sleep(random.uniform(0, 0.01))
    Path(out).write_text(json.dumps(acknowledged))


def consolidator(vault: str, seconds: float, out: str | None = None) -> None:
    """Consolidate in a loop; with ``out``, write how many attempts succeeded and failed."""
    from memd import Memory
    from memd.core.errors import MemdError

    memory = Memory.open(vault)
    deadline = time.monotonic() + seconds
    ok = 0
    errors: list[str] = []
    while time.monotonic() < deadline:
        try:
            memory.consolidate()
            ok += 1
        except MemdError as err:
            errors.append(str(err))
            if out is None:
                print(f"consolidate: {err}", file=sys.stderr)
        time.sleep(0.05)
    if out is not None:
        Path(out).write_text(json.dumps({"ok": ok, "failed": len(errors), "errors": errors}))


def slow_adder(vault: str, name: str, seconds: float, out: str) -> None:
    """Add an entry every few tenths of a second until the deadline; record each acknowledged one."""
    from memd import Memory
    from memd.core.errors import MemdError

    memory = Memory.open(vault)
    deadline = time.monotonic() + seconds
    acknowledged = []
    n = 0
    while time.monotonic() < deadline:
        text = f"{name} {n}: " + " ".join(random.sample(VOCABULARY, 6))
        n += 1
        try:
            [added] = memory.add(text).added
        except MemdError as err:
            print(f"{name}: {err}", file=sys.stderr)
            continue
        acknowledged.append({"seq": added.seq, "text": text})
        time.sleep(random.uniform(0.1, 0.5))
    Path(out).write_text(json.dumps(acknowledged))


def syncer(vault: str, name: str, rounds: int, out: str) -> None:
    """Add an entry and sync, ``rounds`` times, a moment apart (another device
    does the same); write the acknowledged entries and every failed sync."""
    from memd import Memory
    from memd.core.errors import MemdError

    memory = Memory.open(vault)
    acknowledged, failed = [], []
    for n in range(rounds):
        text = f"{name} {n}: " + " ".join(random.sample(VOCABULARY, 6))
        [added] = memory.add(text).added
        acknowledged.append({"seq": added.seq, "text": text})
        try:
            memory.sync()
        except MemdError as err:
            failed.append(str(err))
        time.sleep(random.uniform(0.2, 1.0))
    Path(out).write_text(json.dumps({"acknowledged": acknowledged, "failed": failed}))


def editor(vault: str, seconds: float, out: str, typing: float = 0.05) -> None:
    """Open a file, "type" for a moment (up to ``typing`` seconds: a long
    pause makes the save a stale one, over what memd wrote meanwhile), save
    it back with one more line: half of the saves in place (truncate and
    write), half atomically (temp file and rename), like different editors.
    Records every line it wrote."""
    root = Path(vault)
    deadline = time.monotonic() + seconds
    written = []
    n = 0
    while time.monotonic() < deadline:
        topics = sorted((root / "topics").glob("*.md"))
        path = random.choice([root / "CURRENT.md", *topics[:3]])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        time.sleep(random.uniform(0.0, typing))  # the person types
        line = f"Hand note {n} typed in an editor."
        if not text.endswith("\n"):
            text += "\n"
        new = text + line + "\n"
        if n % 2:
            temp = path.with_name(f".{path.name}.editor-swap")
            temp.write_text(new, encoding="utf-8")
            os.replace(temp, path)
        else:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(new)
        written.append({"path": path.relative_to(root).as_posix(), "line": line})
        n += 1
        time.sleep(random.uniform(0.05, 0.2))
    Path(out).write_text(json.dumps(written))


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    if role == "adder":
        adder(args[0], args[1], int(args[2]), args[3])
    elif role == "slow-adder":
        slow_adder(args[0], args[1], float(args[2]), args[3])
    elif role == "consolidator":
        consolidator(args[0], float(args[1]), *args[2:3])
    elif role == "syncer":
        syncer(args[0], args[1], int(args[2]), args[3])
    elif role == "editor":
        editor(args[0], float(args[1]), args[2], *(float(a) for a in args[3:4]))
    else:
        raise SystemExit(f"unknown role {role}")
