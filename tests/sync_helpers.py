"""Devices of one vault on local disk: a bare repository as the remote, clones as machines."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from memd.app.init import init_vault
from memd.cli import main
from memd.core.document import parse_document
from memd.vault.vault import Vault

from .conftest import Memd


def git(path: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout


def bare_remote(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return remote


def first_device(tmp_path: Path, remote: Path, name: str = "laptop") -> Memd:
    """A vault created here, then shared through ``remote`` with its first sync."""
    vault = init_vault(tmp_path / name).vault
    git(vault.root, "remote", "add", "origin", str(remote))
    memd = Memd(vault)
    memd("sync")
    return memd


def clone_device(tmp_path: Path, remote: Path, name: str) -> Memd:
    """`memd init --from`: another machine joins."""
    path = tmp_path / name
    result = CliRunner().invoke(main, ["init", str(path), "--from", str(remote)])
    assert result.exit_code == 0, result.output
    return Memd(Vault(path.resolve()))


def add(memd: Memd, *texts: str) -> list[int]:
    """Add entries; their seqs."""
    result = memd("add", "--json", "\n".join(texts))
    return [item["seq"] for item in json_of(result.output)]


def json_of(output: str) -> Any:
    """The JSON a command printed, after any warning lines memd wrote first."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(("[", "{")))
    return json.loads("\n".join(lines[start:]))


def live(vault: Vault) -> dict[int, str]:
    """Every live seq and its entry's words; fails when a seq is live twice."""
    counts: Counter[int] = Counter()
    words: dict[int, str] = {}
    for path in vault.entry_files():
        for located in parse_document(path.read_text(encoding="utf-8")).signed():
            assert located.entry.signature is not None
            for seq in located.entry.signature.seq:
                counts[seq] += 1
                words[seq] = located.entry.full_text
    doubled = [seq for seq, n in counts.items() if n > 1]
    assert not doubled, f"seqs live twice in {vault.root.name}: {doubled}"
    return words


def memory_files(vault: Vault) -> dict[str, bytes]:
    """CURRENT.md and the topics: what every device must hold alike once synced."""
    return {k: v for k, v in files(vault).items() if k == "CURRENT.md" or k.startswith("topics/")}


def files(vault: Vault) -> dict[str, bytes]:
    """The vault's files as a person sees them (not git's, not memd's derived ones)."""
    skip = {"index", "journal"}
    return {
        p.relative_to(vault.root).as_posix(): p.read_bytes()
        for p in sorted(vault.root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and not (set(p.parts) & skip) and p.name not in ("lock", "git.lock")
    }


def verify_ok(memd: Memd) -> dict[str, object]:
    result = memd("verify", "--json", ok=False)
    report = json_of(result.output)
    assert report["ok"], f"{memd.vault.root.name}: {report['problems']}"
    return report


# What the first device knows before the second is cloned (``sharing``).
SHARED = [
    "Dana takes her coffee with oat milk and no sugar",
    "Dana prefers a flat white in the morning",
    "Dana runs the river loop on Saturdays",
    "Dana trains for the autumn half marathon with intervals",
]


def sharing(tmp_path: Path) -> tuple[Memd, Memd]:
    """Two devices of one remote that share ``SHARED``: written and consolidated on
    the laptop, synced, then the desktop cloned."""
    remote = bare_remote(tmp_path)
    laptop = first_device(tmp_path, remote, "laptop")
    add(laptop, *SHARED)
    laptop("consolidate")
    laptop("sync")
    return laptop, clone_device(tmp_path, remote, "desktop")


def topic_with(memd: Memd, words: str) -> Path:
    for path in memd.vault.topic_files():
        if words in path.read_text(encoding="utf-8"):
            return path
    raise AssertionError(f"no topic holds {words!r}")


def edit(path: Path, old: str, new: str) -> None:
    """A person's edit of the entry that says ``old`` (the topic's summary may quote it too)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(n for n, line in enumerate(lines) if line.startswith("- <seq=") and old in line)
    lines[at] = lines[at].replace(old, new, 1)
    path.write_text("\n".join(lines), encoding="utf-8")
