"""The vault as it was at a date or commit, read from git objects.

The memory files of that commit (CURRENT.md, topics/, sources/) are written
from git's blobs into a snapshot folder, ``.memd/index/asof/<sha>/`` (inside
the git-ignored index folder), which is a vault of its own: the same search,
ask and tools run on it unchanged, and its index is built there on the first
query and reused after. The vault's working tree and git index are never
touched. A few recent snapshots are kept; older ones are removed.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.core.errors import MemdError
from memd.review.repo import CommitInfo, Repo
from memd.vault.vault import Vault

KEEP = 8  # snapshots kept; the least recently used beyond this are removed
_PATHS = ("CURRENT.md", "topics", "sources")
_DONE = ".complete"
_CITE = re.compile(
    r"(?<![\w/.-])((?:CURRENT\.md|topics/[^\s:\]\[]+\.md|sources/[^\s:\]\[]+\.md):\d+(?:-\d+)?)(?![\d@])"
)


@dataclass(frozen=True)
class PastVault:
    """A read-only vault holding the memory as of one commit."""

    vault: Vault
    commit: CommitInfo
    asked: str  # the date or revision asked for

    @property
    def short(self) -> str:
        return self.commit.short

    def cite(self, where: str) -> str:
        """``topics/x.md:7`` -> ``topics/x.md:7@3f2a1c9``."""
        return f"{where}@{self.short}"

    def cite_text(self, text: str) -> str:
        """Every ``path:line`` in ``text`` (an answer) cited at this commit."""
        return _CITE.sub(lambda m: self.cite(m.group(1)), text)

    def cite_hit(self, hit: dict[str, Any]) -> dict[str, Any]:
        where = f"{hit['path']}:{hit['line']}"
        if hit.get("end_line") not in (None, hit["line"]):
            where += f"-{hit['end_line']}"
        return {**hit, "cite": self.cite(where), "commit": self.commit.sha}

    def cite_answer(self, data: dict[str, Any]) -> dict[str, Any]:
        """An answer's JSON with its citations made at this commit."""
        out = dict(data)
        out["answer"] = self.cite_text(str(data.get("answer", "")))
        for key in ("support", "evidence"):
            out[key] = [{**item, "cite": self.cite(item["cite"])} for item in data.get(key) or []]
        out["as_of"] = self.to_json()
        return out

    def to_json(self) -> dict[str, object]:
        return {"asked": self.asked, "commit": self.commit.sha, "short": self.short, "date": self.commit.date}


@dataclass(frozen=True)
class PastSearch:
    past: PastVault
    query: str
    hits: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, object]:
        return {"query": self.query, "as_of": self.past.to_json(), "results": list(self.hits)}


def past_vault(vault: Vault, when: str) -> PastVault:
    """The vault as of ``when``: a date or time (the last commit made on or
    before it; a bare date means through that day, UTC) or a revision."""
    repo = Repo.open(vault)
    if repo.head() is None:
        raise MemdError("the vault has no commits yet, so it has no past to search")
    sha = repo.resolve(when)
    commit = repo.commit(sha)
    return PastVault(Vault(_snapshot(vault, repo, sha)), commit, when)


def search_as_of(vault: Vault, query: str, when: str, limit: int = 10, filters: Any = None) -> PastSearch:
    """``memd search`` over the vault as of ``when``; hits cite ``path:line@sha``."""
    from memd.ask.tools import search

    past = past_vault(vault, when)
    hits = search(past.vault, query, limit, filters)
    return PastSearch(past, query, tuple(past.cite_hit(hit) for hit in hits))


def _snapshot(vault: Vault, repo: Repo, sha: str) -> Path:
    base = vault.index_dir / "asof"
    target = base / sha
    marker = target / _DONE
    if marker.exists():
        os.utime(marker)  # recently used: kept longest
        return target
    base.mkdir(parents=True, exist_ok=True)
    building = base / f".{sha}.{os.getpid()}.tmp"
    shutil.rmtree(building, ignore_errors=True)
    try:
        files = {
            rel: blob
            for rel, blob in repo.files(sha, _PATHS).items()
            if (rel == "CURRENT.md" or rel.endswith(".md")) and not rel.rsplit("/", 1)[-1].startswith(".")
        }
        blobs = repo.read(files.values())
        root = building.resolve()
        for rel, blob in files.items():
            data = blobs.get(blob)
            path = (building / rel).resolve()
            if data is None or root not in path.parents:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (building / ".memd").mkdir(parents=True, exist_ok=True)
        if vault.config_path.is_file():
            # Today's settings (the model endpoint, say) apply to questions asked today.
            shutil.copyfile(vault.config_path, building / ".memd" / "config.toml")
        (building / _DONE).write_text(sha + "\n", encoding="utf-8")
        try:
            os.rename(building, target)
        except OSError:
            shutil.rmtree(building, ignore_errors=True)  # another process made it first
            if not marker.exists():
                raise
    except OSError as err:
        shutil.rmtree(building, ignore_errors=True)
        raise MemdError(f"cannot write the snapshot of {sha[:7]} under {base}: {err.strerror or err}") from None
    _prune(base, keep=target)
    return target


def _prune(base: Path, keep: Path) -> None:
    done = []
    for folder in base.iterdir():
        marker = folder / _DONE
        if folder != keep and marker.exists():
            done.append((marker.stat().st_mtime, folder))
    for _, folder in sorted(done, reverse=True)[KEEP - 1 :]:
        shutil.rmtree(folder, ignore_errors=True)
