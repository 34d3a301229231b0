"""Devices and their seq spaces (ARCHITECTURE.md §7).

A seq stays a plain positive integer. Device ``k`` (k >= 1) allocates only
from its own space, ``k * SPAN + 1`` to ``(k + 1) * SPAN - 1``, so the
leading digits of a seq name the device that assigned it: ``2000000042`` is
device 2's 42nd seq. Space 0 (``1`` to ``SPAN - 1``) is where a vault that
was never synced allocates, exactly as before devices existed, and where a
copy allocates until it is registered.

The registry, ``.memd/devices.json``, is committed: index -> id, name, date.
This clone's own identity lives in its git config (``memd.device``, and
``memd.deviceIndex`` once the remote holds its claim). Git config belongs to
one clone and ``git clone`` never copies it, so a fresh clone can never be
mistaken for the device it was cloned from. An index is claimed by pushing
the registry: the remote refuses a push that does not fast-forward, so two
devices can never both be confirmed on one index (``flow.py``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.core.atomic import atomic_write, read_bytes
from memd.core.errors import FormatError
from memd.vault.seqspace import REGISTRY, SPAN, bounds
from memd.vault.vault import Vault

if TYPE_CHECKING:
    from subprocess import CompletedProcess

_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,40}$")


@dataclass(frozen=True)
class Device:
    """A clone registered for a seq space of its own."""

    index: int
    id: str
    name: str
    registered: str | None = None

    @property
    def first_seq(self) -> int:
        return bounds(self.index).start

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "id": self.id,
            "name": self.name,
            "registered": self.registered,
            "first_seq": self.first_seq,
        }


@dataclass(frozen=True)
class Registry:
    """The devices the synced vault knows, each with its space."""

    devices: tuple[Device, ...] = ()

    def by_index(self) -> dict[int, Device]:
        return {device.index: device for device in self.devices}

    def find(self, device_id: str | None) -> Device | None:
        return next((d for d in self.devices if d.id == device_id), None)

    def next_index(self) -> int:
        return max((d.index for d in self.devices), default=0) + 1

    def with_device(self, device: Device) -> Registry:
        kept = [d for d in self.devices if d.id != device.id and d.index != device.index]
        return Registry(tuple(sorted([*kept, device], key=lambda d: d.index)))

    def render(self) -> str:
        devices = {str(d.index): {"id": d.id, "name": d.name, "registered": d.registered} for d in self.devices}
        return json.dumps({"span": SPAN, "devices": devices}, indent=2, sort_keys=True) + "\n"


def parse_registry(text: str | None) -> Registry:
    """The registry in ``text`` (None or empty: no devices). Raises FormatError."""
    if not text or not text.strip():
        return Registry()
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise FormatError(f"{REGISTRY} is not valid JSON ({err})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("devices", {}), dict):
        raise FormatError(f"{REGISTRY} must hold a 'devices' table")
    if raw.get("span", SPAN) != SPAN:
        raise FormatError(f"{REGISTRY} uses seq spaces of {raw.get('span')!r}; this memd uses {SPAN}")
    devices = []
    for key, item in raw.get("devices", {}).items():
        if not (isinstance(key, str) and key.isdigit() and int(key) >= 1 and isinstance(item, dict)):
            raise FormatError(f"{REGISTRY}: {key!r} is not a device index (1, 2, ...)")
        device_id, name = item.get("id"), item.get("name", "")
        if not isinstance(device_id, str) or not _ID.match(device_id) or not isinstance(name, str):
            raise FormatError(f"{REGISTRY}: device {key} has no valid id")
        when = item.get("registered")
        devices.append(Device(int(key), device_id, name, when if isinstance(when, str) else None))
    ids = [d.id for d in devices]
    if len(set(ids)) != len(ids):
        raise FormatError(f"{REGISTRY} names one device id at two indexes")
    return Registry(tuple(sorted(devices, key=lambda d: d.index)))


def registry_path(vault: Vault) -> Path:
    return vault.root / REGISTRY


def read_registry(vault: Vault) -> Registry:
    path = registry_path(vault)
    try:
        text = read_bytes(path).decode("utf-8")
    except FileNotFoundError:
        return Registry()
    except (OSError, UnicodeDecodeError) as err:
        raise FormatError(f"{REGISTRY} is unreadable ({err})") from None
    return parse_registry(text)


def write_registry(vault: Vault, registry: Registry) -> None:
    atomic_write(registry_path(vault), registry.render())


# -- this clone's identity (git config) ------------------------------------------


def run_git(vault: Vault, *args: str) -> CompletedProcess[str]:
    # Imported when git is asked: allocating a seq for `memd add` needs no git.
    from memd.git.command import run_git as run

    return run(vault, *args)


def _key(vault: Vault, name: str) -> str:
    """The git config key for this vault (a vault inside a bigger repository
    gets its own subsection, named by its folder)."""
    prefix = run_git(vault, "rev-parse", "--show-prefix").stdout.strip()
    return f"memd.{prefix}.{name}" if prefix else f"memd.{name}"


@dataclass(frozen=True)
class Identity:
    """This clone as its git config knows it."""

    device_id: str | None  # chosen when the clone first asked to be registered
    index: int | None  # set once the remote holds the claim; None: unregistered


def local_identity(vault: Vault) -> Identity:
    device_id = run_git(vault, "config", "--get", _key(vault, "device")).stdout.strip() or None
    raw = run_git(vault, "config", "--get", _key(vault, "deviceIndex")).stdout.strip()
    index = int(raw) if raw.isdigit() and int(raw) >= 1 else None
    return Identity(device_id if device_id and _ID.match(device_id) else None, index)


def ensure_device_id(vault: Vault) -> str:
    """This clone's device id, chosen now if it has none yet."""
    known = local_identity(vault).device_id
    if known:
        return known
    device_id = new_device_id()
    run_git(vault, "config", _key(vault, "device"), device_id)
    return device_id


def confirm_index(vault: Vault, index: int) -> None:
    """Record that the remote holds this clone's claim: it allocates from ``index`` from now on."""
    result = run_git(vault, "config", _key(vault, "deviceIndex"), str(index))
    if result.returncode != 0:
        raise FormatError(f"could not record the device index in git config: {result.stderr.strip()}")


def new_device_id() -> str:
    import secrets
    import socket

    host = re.sub(r"[^a-z0-9]+", "-", socket.gethostname().lower()).strip("-")[:24] or "device"
    return f"{host}-{secrets.token_hex(3)}"


def device_name(device_id: str, taken: Collection[str] = ()) -> str:
    """The name people see: the host and the first four characters of the id's
    random part (``vm-3f2a``), so two machines called ``vm`` read apart; the
    whole id when another device already goes by that name."""
    host, _, token = device_id.rpartition("-")
    name = f"{host}-{token[:4]}" if host and token else device_id
    return device_id if name in taken else name


# -- the space seq allocation uses (memd/vault/state.py calls this under the vault lock) --


def allocation_space(vault: Vault, cached: Any) -> tuple[int, dict[str, Any]]:
    """This clone's seq space in a vault that has a registry, and a record that
    lets the next call skip git. (A vault without one was never synced: it
    allocates from space 0 with no git call at all, and ``state.allocate``
    decides that itself, without loading this module.) The index comes from
    git config, cached against the config file's size and mtime, so it is
    asked again only when the config changed.
    """
    config = _config_file(vault)
    stamp = _stamp(config)
    if (
        isinstance(cached, dict)
        and cached.get("config") == (str(config) if config else None)
        and cached.get("stamp") == stamp
        and isinstance(cached.get("index"), int)
        and not cached.get("claimed")
    ):
        return int(cached["index"]), cached
    identity = local_identity(vault)
    index = identity.index or (_published_claim(vault, identity.device_id) if identity.device_id else 0)
    # A clone that claimed an index the remote does not hold yet asks again next time.
    claimed = bool(identity.device_id) and not index
    return index, {
        "config": str(config) if config else None,
        "stamp": _stamp(config),  # again: recording a claim may have written the config
        "index": index,
        "claimed": claimed,
    }


def _published_claim(vault: Vault, device_id: str) -> int:
    """The index of this clone's claim if a remote already holds it (a sync that
    stopped right after its push), recorded at once; else 0."""
    refs = run_git(vault, "for-each-ref", "--format=%(refname)", "refs/remotes").stdout.split()
    prefix = run_git(vault, "rev-parse", "--show-prefix").stdout.strip()
    for ref in refs:
        shown = run_git(vault, "show", f"{ref}:{prefix}{REGISTRY}")
        if shown.returncode != 0:
            continue
        try:
            device = parse_registry(shown.stdout).find(device_id)
        except FormatError:
            continue
        if device is not None:
            confirm_index(vault, device.index)
            return device.index
    return 0


def _config_file(vault: Vault) -> Path | None:
    dotgit = vault.root / ".git"
    if dotgit.is_dir():
        return dotgit / "config"
    result = run_git(vault, "rev-parse", "--git-path", "config")
    if result.returncode != 0:
        return None
    path = Path(result.stdout.strip())
    return path if path.is_absolute() else vault.root / path


def _stamp(path: Path | None) -> list[int] | None:
    if path is None:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_mtime_ns, stat.st_size]


def unregistered_device(index: int, device_id: str, taken: Collection[str] = ()) -> Device:
    return Device(index, device_id, device_name(device_id, taken))


def with_claim(registry: Registry, device_id: str, when: str) -> tuple[Registry, Device]:
    """The registry with this clone's claim: its existing one, or the next free index."""
    mine = registry.find(device_id)
    if mine is not None:
        return registry, mine
    taken = {d.name for d in registry.devices}
    device = replace(unregistered_device(registry.next_index(), device_id, taken), registered=when)
    return registry.with_device(device), device
