"""What one ``memd sync`` did, and the stop that leaves a decision to a person."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memd.sync.gitops import Remote, SyncError


@dataclass(frozen=True)
class SyncReport:
    """What one ``memd sync`` did (``--json`` prints ``to_json()``)."""

    remote: str
    branch: str
    pulled: int = 0  # commits received from the remote
    pushed: int = 0  # commits sent to it
    received: int = 0  # entries (seqs) that arrived
    resolved: tuple[str, ...] = ()  # conflicts memd resolved on its own
    conflicts: tuple[str, ...] = ()  # what a person must decide (then nothing was written)
    committed: tuple[str, ...] = ()  # commits made here first: hand edits, buffered entries
    merge: str | None = None  # the merge commit, when one was made
    fast_forward: bool = False
    head: str | None = None
    device: dict[str, Any] | None = None
    registered: bool = False  # this run made the remote hold this clone's device claim
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.conflicts

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("resolved", "conflicts", "committed", "warnings"):
            data[key] = list(data[key])
        data["ok"] = self.ok
        return data


class SyncConflict(SyncError):
    """A person must decide; the working tree was not touched."""

    def __init__(self, report: SyncReport, remote: Remote, others: tuple[str, ...] = ()) -> None:
        lines = "\n".join(f"  {c}" for c in report.conflicts)
        advice = []
        # A seq two clones gave to two entries says its own fix, which --take does not settle.
        clashes = [c for c in report.conflicts if "was given to two different entries" in c]
        if len(others) + len(clashes) < len(report.conflicts):
            # memd's own files (CURRENT.md, topics): memd settles them when told which version wins.
            advice.append(
                "To decide, keep one version of each entry and line changed on both devices: "
                "`memd sync --take here` keeps this device's, `memd sync --take remote` the remote's "
                "(the other stays in git history); or edit the lines here to agree and `memd sync` again."
            )
        if others:
            paths = ", ".join(sorted({c.split(":", 1)[0] for c in others}))
            advice.append(
                f"For {paths}: `git merge {remote.name}/{remote.branch}`, fix the lines git marks, "
                "`git commit`, then `memd sync` again."
            )
        super().__init__(
            f"sync stopped, a person must decide (the working tree was not changed):\n{lines}\n" + "\n".join(advice)
        )
        self.report = report


@dataclass
class Tally:
    pulled: int = 0
    pushed: int = 0
    received: int = 0
    resolved: list[str] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    merge: str | None = None
    fast_forward: bool = False
    registered: bool = False
