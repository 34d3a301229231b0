"""Three-way merges of the vault's other files: state, device registry, the rest.

- ``.memd/state.json`` is derived, never a conflict: each device's seq
  counter takes the larger value, the consolidation count adds both sides'
  new ones, the buffer's start comes from the merged CURRENT.md.
- ``.memd/devices.json``: every device either side registered. Two claims of
  one index can only meet here before the later one was pushed (a claim
  counts once the remote holds it, ``flow.py``), so the remote's keeps the
  index and this side's claim moves to the next free one.
- Anything else (settings, sources, ``.gitignore``): git's own line merge;
  lines changed differently on both sides are left to the person.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from memd.git.command import run_bytes
from memd.vault.spaces import Registry, parse_registry
from memd.vault.state import State, parse_state, render_state


def merge_state(base: str | None, ours: str | None, theirs: str | None, buffer_has_entries: bool) -> str:
    was, mine, yours = (parse_state(text)[0] if text else State() for text in (base, ours, theirs))
    spaces = dict(mine.spaces)
    for key, value in yours.spaces.items():
        spaces[key] = max(spaces.get(key, 0), value)
    times = [t for t in (mine.last_consolidation, yours.last_consolidation) if t]
    since = [t for t in (mine.buffer_since, yours.buffer_since) if t]
    merged = replace(
        mine,
        next_seq=max(mine.next_seq, yours.next_seq),
        epoch=max(mine.epoch, yours.epoch, mine.epoch + yours.epoch - was.epoch),
        last_consolidation=max(times) if times else None,
        buffer_since=min(since) if since and buffer_has_entries else None,
        spaces=spaces,
    )
    return render_state(merged)


def merge_registry(base: str | None, ours: str | None, theirs: str | None) -> tuple[str, list[str]]:
    """The merged registry and what was decided. Raises FormatError for a damaged one."""
    parse_registry(base)
    mine, yours = parse_registry(ours), parse_registry(theirs)
    merged = Registry(yours.devices)
    notes = []
    for device in mine.devices:
        known = merged.find(device.id)
        if known is not None:
            continue
        if device.index in merged.by_index():
            moved = replace(device, index=merged.next_index())
            notes.append(
                f"device {device.name} had claimed index {device.index}, which the remote gave to "
                f"{merged.by_index()[device.index].name}; it claims index {moved.index} instead"
            )
            device = moved
        merged = merged.with_device(device)
    return merged.render(), notes


def merge_text(base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    """Git's line merge of one file; None when lines conflict."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    with tempfile.TemporaryDirectory(prefix="memd-merge-") as folder:
        paths = []
        for name, content in (("ours", ours), ("base", base or b""), ("theirs", theirs)):
            path = Path(folder) / name
            path.write_bytes(content)
            paths.append(str(path))
        result = run_bytes(None, "merge-file", "-p", *paths)
    return result.stdout if result.returncode == 0 else None
