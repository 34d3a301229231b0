"""Which seqs each device may assign: the arithmetic of seq spaces
(ARCHITECTURE.md §7; the devices themselves are in spaces.py).

Kept apart from the device registry, so that an add in a vault that was
never synced (space 0) loads neither the registry nor git.
"""

from __future__ import annotations

SPAN = 1_000_000_000
REGISTRY = ".memd/devices.json"  # committed: present once the vault was synced


def space_of(seq: int) -> int:
    """The device index whose space holds ``seq`` (0: the shared legacy space)."""
    return seq // SPAN


def bounds(index: int) -> range:
    """The seqs device ``index`` may assign."""
    return range(max(1, index * SPAN + (1 if index else 0)), (index + 1) * SPAN)
