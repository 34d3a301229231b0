"""Consolidation: the CURRENT buffer becomes topic documents, provably whole.

rewrite (group, fold duplicates, supersede) -> plan (route blocks to topics)
-> apply (update topic sections) -> split big topics -> merge small similar
ones -> refresh summaries -> account for every seq -> journal, write, commit.
Everything up to the journal happens in memory, so ``--dry-run`` is the same
code path minus the writes, and a failed check leaves the vault untouched.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from . import journal as journal_mod
from . import ledger
from .atomic import read_text
from .buffer import buffer_status
from .document import Document, Entry, parse_document
from .engine import get_engine
from .engine.base import Engine, Item, Supersession
from .errors import MemdError
from .history import GitError, blocked, commit, commit_hand_edits, vault_specs
from .maintain import merge_topics, split_topic
from .signature import SeqSet
from .state import State, highest_seq, read_state, render_state
from .timeutil import format_time, now
from .tokens import count_tokens
from .topics import adopt_unsigned, sections_of
from .vault import Vault
from .verify import account
from .workspace import Workspace


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
    splits: tuple[tuple[str, tuple[str, ...]], ...] = ()
    merges: tuple[tuple[str, str], ...] = ()
    commit: str | None = None
    dry_run: bool = False
    warnings: tuple[str, ...] = ()
    skipped: str | None = None
    consolidation: int = 0
    fallbacks: int = 0  # steps the model failed, done by the offline engine instead

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


@dataclass
class _Run:
    """Mutable bookkeeping for one consolidation (never leaves this module)."""

    moves: list[Move] = field(default_factory=list)
    superseded: list[Supersession] = field(default_factory=list)
    logs: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def consolidate(
    vault: Vault,
    *,
    trigger: str = "manual",
    dry_run: bool = False,
    if_due: bool = False,
    engine: Engine | None = None,
) -> Outcome:
    engine = engine or get_engine(vault)
    with vault.locked():
        recovered = recover(vault)
        current_text = read_text(vault.current, "CURRENT.md") if vault.current.exists() else ""
        current = parse_document(current_text)
        status = buffer_status(vault, current)
        if if_due and status.due_reason is None:
            return Outcome(0, "", trigger, engine.name, skipped="not due", warnings=tuple(filter(None, [recovered])))
        if if_due:
            trigger = status.due_reason or trigger
        warnings = [recovered] if recovered else []
        if not dry_run:
            warnings += _commit_hand_edits(vault)
        return _consolidate(vault, engine, current_text, current, trigger, dry_run, warnings)


def _consolidate(
    vault: Vault,
    engine: Engine,
    current_text: str,
    current: Document,
    trigger: str,
    dry_run: bool,
    warnings: list[str],
) -> Outcome:
    moment = now()
    stamp = format_time(moment)
    state, _ = read_state(vault)
    counter = itertools.count(max(state.next_seq, highest_seq(vault) + 1))
    current, _ = adopt_unsigned(current, lambda: next(counter), stamp)
    items = [Item(e.entry.signature, e.entry.full_text) for e in current.signed() if e.entry.signature]
    if not items:
        return Outcome(
            0, "", trigger, engine.name, dry_run=dry_run, skipped="the buffer is empty", warnings=tuple(warnings)
        )
    epoch = state.epoch + 1
    engine.begin(f"consolidation {epoch}")
    space = Workspace.load(vault, warnings)
    before_seqs = space.live_seqs() + [s for item in items for s in item.seqs]
    run = _Run(warnings=warnings)
    for batch in _batches(items, vault.config.buffer_tokens):
        _route_batch(space, engine, batch, run, counter, stamp)
    before_seqs += space.adopted
    splits = [s for t in sorted(space.touched) for s in split_topic(space, engine, t, vault.config.split_tokens)]
    merges = merge_topics(space, engine, vault.config.merge_tokens, vault.config.split_tokens)
    for survivor, absorbed in merges:
        run.logs.setdefault(survivor, []).append(f"merged topic {absorbed}")
    for topic_id, parts in splits:
        for part in parts:
            run.logs.setdefault(part, []).append(f"split from {topic_id}")
    consolidated = {seq for item in items for seq in item.seqs}
    remaining = _without_entries(current, consolidated)
    final_docs = space.finish(engine, moment, run.logs, epoch)
    fallbacks = engine.drain_notes()
    run.warnings.extend(fallbacks)
    problems = account(before_seqs, [*final_docs.values(), remaining], run.superseded)
    if problems:
        raise ConsolidationError("consolidation refused, nothing was changed: " + "; ".join(problems))
    outcome = Outcome(
        entries=len(consolidated),
        seqs=str(SeqSet.of(consolidated)),
        trigger=trigger,
        engine=engine.name,
        moves=tuple(run.moves),
        new_topics=tuple(sorted(space.created - space.deleted)),
        touched_topics=tuple(sorted(space.touched - space.deleted)),
        superseded=tuple(run.superseded),
        splits=tuple(splits),
        merges=tuple(merges),
        dry_run=dry_run,
        warnings=tuple(run.warnings),
        consolidation=epoch,
        fallbacks=len(fallbacks),
    )
    if dry_run:
        return outcome
    leftover = bool(remaining.signed())
    new_state = State(
        next_seq=next(counter),  # the first seq this run did not hand out
        epoch=epoch,
        last_consolidation=stamp,
        buffer_since=state.buffer_since if leftover else None,
    )
    changes = space.changes(final_docs)
    changes.append(journal_mod.FileChange("CURRENT.md", current_text, remaining.render()))
    state_before = vault.state_path.read_text(encoding="utf-8") if vault.state_path.exists() else None
    changes.append(journal_mod.FileChange(".memd/state.json", state_before, render_state(new_state)))
    journal = journal_mod.Journal(tuple(changes), _message(outcome))
    sha, note = journal_mod.apply(vault, journal, lambda j: _commit_machine(vault, j.message))
    tokens = sum(count_tokens(item.text) for item in items)  # model costs are put per 1,000 of these
    ledger.note_intake(vault.meta_dir / "ledger.jsonl", {"event": "consolidation", "consolidation": epoch,
                                                         "buffer_tokens": tokens})
    return replace(outcome, commit=sha, warnings=(*run.warnings, *filter(None, [note])))


def _route_batch(
    space: Workspace, engine: Engine, batch: list[Item], run: _Run, counter: Iterator[int], stamp: str
) -> None:
    rewrite = engine.rewrite(batch)
    blocks = list(rewrite.blocks)
    catalog = space.catalog()
    routes = engine.plan(blocks, catalog)
    known = {topic.id for topic in catalog}
    new_ids: dict[str, str] = {}
    for route in routes:
        block = blocks[route.block]
        if route.topic is not None and route.topic in known:
            topic_id = route.topic
        else:
            title = route.new_title or block.title
            if title not in new_ids:
                new_ids[title] = space.create(title)
            topic_id = new_ids[title]
        space.adopt(topic_id, counter, stamp)
        sections = sections_of(space.docs[topic_id])
        update = engine.update_topic(sections, block)
        space.apply(topic_id, list(update.sections))
        run.superseded.extend(update.superseded)
        added = len(block.items)
        log = [f"+{added} entr{'y' if added == 1 else 'ies'}"]
        log += [f"seq {s.new} supersedes seq {s.old} ({s.reason})" for s in update.superseded]
        run.logs.setdefault(topic_id, []).extend(log)
        titles = {str(i.seqs): sec.title for sec in update.sections for i in sec.items}
        run.moves.extend(Move(str(item.seqs), topic_id, titles.get(str(item.seqs), "")) for item in block.items)
    for record in rewrite.superseded:
        run.superseded.append(record)
        holder = next((m.topic for m in run.moves if set(record.new) <= set(SeqSet.parse(m.seqs))), None)
        if holder is not None:
            run.logs.setdefault(holder, []).append(f"seq {record.new} supersedes seq {record.old} ({record.reason})")


def _batches(items: list[Item], limit: int) -> list[list[Item]]:
    """Bounded batches (by tokens) so a huge buffer never becomes one huge step."""
    batches: list[list[Item]] = [[]]
    size = 0
    for item in items:
        tokens = count_tokens(item.text)
        if batches[-1] and size + tokens > limit:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += tokens
    return batches


def _without_entries(document: Document, seqs: set[int]) -> Document:
    blocks = tuple(
        b
        for b in document.blocks
        if not (isinstance(b, Entry) and b.signature is not None and set(b.signature.seq) <= seqs)
    )
    return replace(document, blocks=blocks)


def _message(outcome: Outcome) -> str:
    trailers = [
        f"Memd-Seq: {outcome.seqs}",
        f"Memd-Engine: {outcome.engine}",
        f"Memd-Trigger: {outcome.trigger}",
        f"Memd-Consolidation: {outcome.consolidation}",
    ]
    if outcome.fallbacks:
        trailers.append(f"Memd-Fallback: {outcome.fallbacks} step(s) done offline after bad model output")
    body = [f"{m.seqs} -> topics/{m.topic}.md" + (f" # {m.section}" if m.section else "") for m in outcome.moves[:200]]
    if len(outcome.moves) > 200:
        body.append(f"... and {len(outcome.moves) - 200} more")
    body += [f"seq {s.new} supersedes seq {s.old}: {s.reason}" for s in outcome.superseded]
    body += [f"split {topic} -> {', '.join(parts)}" for topic, parts in outcome.splits]
    body += [f"merged {absorbed} into {survivor}" for survivor, absorbed in outcome.merges]
    return "\n\n".join([outcome.subject, "\n".join(body), "\n".join(trailers)])


def _commit_machine(vault: Vault, message: str) -> tuple[str | None, str | None]:
    reason = blocked(vault)
    if reason:
        return None, f"not committed: {reason}; the files are consolidated and will be committed next time"
    try:
        return commit(vault, message, vault_specs(vault), vault.config.git_author), None
    except GitError as err:
        return None, f"not committed: {err}"


def _commit_hand_edits(vault: Vault) -> list[str]:
    if blocked(vault):
        return []
    try:
        commit_hand_edits(vault)
    except GitError as err:
        return [f"hand edits not committed: {err}"]
    return []


def recover(vault: Vault) -> str | None:
    """Finish or undo a consolidation that was interrupted (see journal.py)."""
    with vault.locked():
        return journal_mod.recover(vault, lambda j: _commit_machine(vault, j.message))
