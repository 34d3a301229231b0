"""What ``memd status`` says about devices and the remote (no network)."""

from __future__ import annotations

from typing import Any

from memd.core.errors import FormatError
from memd.git.command import head
from memd.git.log import blocked, foreign_repository
from memd.sync.gitops import Remote, SyncError, ahead_behind, resolve_remote, tracking
from memd.vault.seqspace import bounds
from memd.vault.spaces import device_name, local_identity, read_registry
from memd.vault.vault import Vault


def device_facts(vault: Vault) -> dict[str, Any]:
    """This clone's device: its index and the seqs it assigns."""
    try:
        registry = read_registry(vault)
        problem = None
    except FormatError as err:
        registry, problem = None, str(err)
    identity = local_identity(vault) if blocked(vault) is None or registry else None
    index = identity.index if identity and identity.index else 0
    known = registry.by_index().get(index) if registry and index else None
    facts: dict[str, Any] = {
        "index": index,
        "id": identity.device_id if identity else None,
        "name": known.name if known else (device_name(identity.device_id) if identity and identity.device_id else None),
        "registered": bool(index),
        "first_seq": bounds(index).start,
        "devices": len(registry.devices) if registry else 0,
    }
    if problem:
        facts["problem"] = problem
    return facts


def sync_facts(vault: Vault, remote_name: str | None) -> dict[str, Any]:
    """Device, the remote's branch the vault follows, and how far ahead of /
    behind it this clone is, as of the last fetch."""
    facts: dict[str, Any] = {"device": device_facts(vault), "remote": None}
    if blocked(vault) == "the vault is not in a git repository (run `git init` in it)":
        return facts
    if foreign_repository(vault) is not None:
        return facts  # the enclosing checkout's remote is not this vault's ([git] repository = "own")
    try:
        remote: Remote = resolve_remote(vault, remote_name or "origin")
    except SyncError:
        return facts
    local, known = head(vault), tracking(vault, remote)
    facts["remote"] = f"{remote.name}/{remote.branch}"
    facts["tracked"] = remote.tracked  # False: no branch tracked yet (the next sync picks and records one)
    if local and known:
        ahead, behind = ahead_behind(vault, local, known)
        facts.update(ahead=ahead, behind=behind)
    else:
        facts.update(ahead=None, behind=None)
    return facts
