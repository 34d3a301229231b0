"""What a consolidation did: the outcome front doors show and the commit message it leaves."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from memd.core.errors import MemdError
from memd.engine.base import Supersession
from memd.engine.notes import Fallback, trailer


class ConsolidationError(MemdError):
    """A consolidation was refused; the vault is unchanged."""


@dataclass(frozen=True)
class Move:
    seqs: str
    topic: str
    section: str


@dataclass(frozen=True)
class Outcome:
    """What a consolidation did (or, with dry_run, would do)."""

    entries: int
    seqs: str
    trigger: str
    engine: str
    moves: tuple[Move, ...] = ()
    new_topics: tuple[str, ...] = ()
    touched_topics: tuple[str, ...] = ()
    superseded: tuple[Supersession, ...] = ()
    # Each superseded entry as it read before it was replaced (old seq, entry
    # lines), so its words stay in the history even if it never left the buffer.
    replaced: tuple[tuple[str, str], ...] = ()
    splits: tuple[tuple[str, tuple[str, ...]], ...] = ()
    merges: tuple[tuple[str, str], ...] = ()
    commit: str | None = None
    dry_run: bool = False
    warnings: tuple[str, ...] = ()
    skipped: str | None = None
    consolidation: int = 0
    fallbacks: int = 0  # model steps done by the offline engine instead (the warnings say why)
    filed: int = 0  # buffer entries filed (one can hold several seqs)
    left: int = 0  # buffer entries left for the next part of a big consolidation

    @classmethod
    def joined(cls, parts: list[Outcome]) -> Outcome:
        """The parts of one consolidation of a big buffer (each its own commit) as one outcome."""
        if len(parts) == 1:
            return parts[0]
        last = parts[-1]
        seqs = "+".join(p.seqs for p in parts if p.seqs)
        return cls(
            entries=sum(p.entries for p in parts),
            seqs=seqs,
            trigger=last.trigger,
            engine=last.engine,
            moves=tuple(m for p in parts for m in p.moves),
            new_topics=tuple(sorted({t for p in parts for t in p.new_topics})),
            touched_topics=tuple(sorted({t for p in parts for t in p.touched_topics})),
            superseded=tuple(s for p in parts for s in p.superseded),
            replaced=tuple(r for p in parts for r in p.replaced),
            splits=tuple(s for p in parts for s in p.splits),
            merges=tuple(m for p in parts for m in p.merges),
            commit=last.commit,
            dry_run=last.dry_run,
            warnings=tuple(w for p in parts for w in p.warnings),
            skipped=last.skipped if all(p.skipped for p in parts) else None,
            consolidation=last.consolidation,
            fallbacks=sum(p.fallbacks for p in parts),
            filed=sum(p.filed for p in parts),
            left=last.left,
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["superseded"] = [{"new": str(s.new), "old": str(s.old), "reason": s.reason} for s in self.superseded]
        data["subject"] = self.subject
        return data

    @property
    def subject(self) -> str:
        subject = (
            f"consolidate: {self.entries} entries -> {len(self.touched_topics)} topics ({len(self.new_topics)} new)"
        )
        if self.merges:
            subject += f", {len(self.merges)} merge{'s' if len(self.merges) > 1 else ''}"
        if self.splits:
            subject += f", {len(self.splits)} split{'s' if len(self.splits) > 1 else ''}"
        return subject


def commit_message(outcome: Outcome) -> str:
    """The consolidation's commit message: subject, one line per move, trailers."""
    trailers = [
        f"Memd-Seq: {outcome.seqs}",
        f"Memd-Engine: {outcome.engine}",
        f"Memd-Trigger: {outcome.trigger}",
        f"Memd-Consolidation: {outcome.consolidation}",
    ]
    if outcome.fallbacks:
        named = trailer(w for w in outcome.warnings if isinstance(w, Fallback))  # the causes, when in hand
        trailers.append(f"Memd-Fallback: {named or f'{outcome.fallbacks} step(s) done offline'}")
    body = [f"{m.seqs} -> topics/{m.topic}.md" + (f" # {m.section}" if m.section else "") for m in outcome.moves[:200]]
    if len(outcome.moves) > 200:
        body.append(f"... and {len(outcome.moves) - 200} more")
    replaced = dict(outcome.replaced)
    for s in outcome.superseded:
        body.append(f"seq {s.new} supersedes seq {s.old}: {s.reason}")
        if str(s.old) in replaced:
            body.extend("    " + line for line in replaced[str(s.old)].splitlines())
    body += [f"split {topic} -> {', '.join(parts)}" for topic, parts in outcome.splits]
    body += [f"merged {absorbed} into {survivor}" for survivor, absorbed in outcome.merges]
    return "\n\n".join([outcome.subject, "\n".join(body), "\n".join(trailers)])
