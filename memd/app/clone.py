"""``memd init --from URL``: this machine becomes one more device of a vault.

The vault is cloned, then synced once: the sync claims the next free device
index and pushes the claim, so this clone assigns seqs from its own space
from its first ``memd add``. An empty remote gets a new vault, pushed.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.core.errors import GitTimeout, VaultError
from memd.git.command import last_line, run
from memd.sync.flow import sync
from memd.sync.gitops import NETWORK_TIMEOUT, RemoteUnreachable, SyncError
from memd.sync.report import SyncReport
from memd.vault.vault import Vault


@dataclass(frozen=True)
class Cloned:
    vault: Vault
    url: str
    created: bool  # the remote was empty: a new vault was made there
    report: SyncReport

    def to_json(self) -> dict[str, Any]:
        return {"vault": str(self.vault.root), "url": self.url, "created": self.created, "sync": self.report.to_json()}


def clone_vault(url: str, path: Path, timeout: float = NETWORK_TIMEOUT) -> Cloned:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise VaultError(f"{path} already exists and is not empty; choose a new folder for the clone")
    existed = path.exists()
    try:
        result = run(None, "clone", "--quiet", "--origin", "origin", url, str(path), timeout=timeout, network=True)
    except GitTimeout:
        _remove(path, existed)
        raise RemoteUnreachable(f"git clone gave no answer in {timeout:g}s; is {url} reachable?") from None
    if result.returncode != 0:
        _remove(path, existed)
        raise RemoteUnreachable(f"could not clone {url}: {last_line(result.stderr)}")
    root = path.resolve()
    empty = run(root, "rev-parse", "-q", "--verify", "HEAD")
    created = empty.returncode != 0
    if created:
        from memd.app.init import init_vault
        from memd.git.log import commit_as_memd, vault_specs

        made = init_vault(root).vault
        commit_as_memd(made, "init: memd vault", vault_specs(made))
    elif not (root / ".memd").is_dir():
        _remove(path, existed)
        raise VaultError(f"{url} holds no memd vault at its top (no .memd/ folder); nothing was kept")
    vault = Vault(root)
    try:
        report = sync(vault, "origin", timeout=timeout)
    except SyncError as err:
        raise SyncError(
            f"cloned the vault to {root} but could not register this device: {err} "
            "(it assigns seqs from the shared range until `memd sync` there succeeds)"
        ) from None
    return Cloned(vault, url, created, report)


def _remove(path: Path, existed: bool) -> None:
    if existed:
        for child in path.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)
