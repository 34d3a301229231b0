"""Consolidation: the CURRENT buffer becomes topic documents, provably whole.

rewrite (group, fold duplicates, supersede) -> plan (route blocks to topics)
-> apply (update topic sections) -> split big topics -> merge small similar
ones -> refresh summaries -> account for every seq -> journal, write, commit.
Everything up to the journal happens in memory, so ``--dry-run`` is the same
code path minus the writes, and a failed check leaves the vault untouched.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import replace

from memd.consolidation.filing import Filing, batches_of, file_batch
from memd.consolidation.leftover import appended_since, buffer_items, entries_of, holds_signed, without_entries
from memd.consolidation.outcome import ConsolidationError, Outcome, commit_message
from memd.consolidation.recovery import recover
from memd.consolidation.restore import SETTLE, Unsettled, Vanished, restore
from memd.consolidation.scrub import redacted_copy, without_secrets
from memd.consolidation.sections import adopt_unsigned
from memd.consolidation.stale import adopted_lines, drop_stale_copies, drop_topic_copies
from memd.consolidation.upkeep import follow_renames, gather_subjects, merge_topics, split_topic
from memd.consolidation.verify import account, reworded
from memd.consolidation.workspace import Workspace
from memd.core import cancel, ledger
from memd.core.atomic import atomic_write, read_text
from memd.core.document import Document, parse_document
from memd.core.entry import Entry
from memd.core.errors import GitError, MemdError
from memd.core.heap import settling
from memd.core.layout import classify, doc_id
from memd.core.signature import SeqSet
from memd.core.timeutil import format_time, now
from memd.core.tokens import count_tokens
from memd.engine import get_engine
from memd.engine.base import Engine, Item
from memd.engine.notes import offline_steps
from memd.git.edits import commit_hand_edits
from memd.git.log import blocked
from memd.vault import acks
from memd.vault import journal as journal_mod
from memd.vault.buffer_status import buffer_status
from memd.vault.journal import FileChange, HandEditConflict, finish_commit
from memd.vault.state import State, advance_past, allocate, highest_seq, read_state, render_state
from memd.vault.vault import Vault

ATTEMPTS = 3
PART_ENTRIES = 2_000  # the most buffer entries one commit files (a bigger buffer goes in parts)


def consolidate(
    vault: Vault,
    *,
    trigger: str = "manual",
    dry_run: bool = False,
    if_due: bool = False,
    engine: Engine | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Outcome:
    """Consolidate the buffer; the vault lock is held only for short moments.

    1. under the lock: recover, put back entries an editor wiped, snapshot
       CURRENT.md and reserve seqs for unsigned items;
    2. commit the person's pending edits (the snapshot's content, exactly);
    3. without the lock: every judgement step, in memory;
    4. under the lock: compare-and-swap every file against the snapshot
       (appends to CURRENT.md meanwhile are kept; any other change means a
       person is editing, and the run starts over from 1 with one batch,
       then parts twice as big after each that lands), journal, write;
    5. without the lock: commit exactly what was written.
    """
    engine = engine or get_engine(vault)
    notes = [n for n in [finish_commit(vault)[1]] if n]
    total = buffered_entries(vault) if progress else 0  # only a progress bar needs the length up front
    parts: list[Outcome] = []
    pace = 0  # batches a part files (0: a whole part), cut to one when a person's edit makes an attempt start over
    owed = 0  # buffer entries the first part found: the call files those, not what arrives meanwhile
    filed = 0  # buffer entries the parts so far filed
    # Between parts the heap is settled: later parts' collections skip what earlier ones left alive.
    with settling() as settle:
        while True:
            # A huge buffer goes in parts, each written and committed before the
            # next is judged: an interrupted run keeps every part it finished.
            base = sum(part.entries for part in parts)
            step = _offset(progress, base, total) if progress else None
            try:
                part, pace = _with_retries(vault, engine, trigger, dry_run, if_due and not parts, notes, step, pace)
            except HandEditConflict as conflict:
                if not parts:
                    raise
                # Parts landed and stay: the person is still editing, the rest waits for the next run.
                waiting = (
                    f"stopped after {filed} of {owed} buffer entries, as files kept changing while memd worked; "
                    f"the rest waits for the next run (the last try: {conflict})"
                )
                parts[-1] = replace(parts[-1], warnings=(*parts[-1].warnings, waiting))
                return Outcome.joined(parts)
            parts.append(part)
            notes = []
            filed += part.filed
            owed = owed or part.filed + part.left
            if dry_run or part.skipped or not part.left or filed >= owed:
                return Outcome.joined(parts)
            settle()


def _with_retries(
    vault: Vault,
    engine: Engine,
    trigger: str,
    dry_run: bool,
    if_due: bool,
    notes: list[str],
    progress: Callable[[int, int], None] | None,
    pace: int,
) -> tuple[Outcome, int]:
    """A part's outcome, and how many batches the next part files (0: a whole part)."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            cancel.check()
            with contextlib.ExitStack() as cleanup:  # the workspace's catalog is closed however the attempt ends
                outcome = _attempt(vault, engine, trigger, dry_run, if_due, notes, progress, cleanup, pace)
            return outcome, pace * 2  # the person may have stopped: parts grow back
        except HandEditConflict as conflict:
            # A person is editing: their edit is committed as theirs and the
            # consolidation is redone on top of it, one batch at a time (a short
            # run ends before their next save); after a few tries, later.
            if attempt == ATTEMPTS:
                raise
            pace = 1
            if isinstance(conflict, Unsettled):
                time.sleep(SETTLE)  # without the vault lock: the editor's save finishes meanwhile
    raise AssertionError("unreachable")


def buffered_entries(vault: Vault) -> int:
    """Entries in CURRENT.md now (the progress bar's length over every part)."""
    try:
        return read_text(vault.current, "CURRENT.md").count("\n- <seq=") if vault.current.exists() else 0
    except MemdError:
        return 0  # unreadable: the attempt itself says why


def _offset(progress: Callable[[int, int], None], base: int, total: int) -> Callable[[int, int], None]:
    return lambda done, size: progress(base + done, max(total, base + size))


def _attempt(
    vault: Vault,
    engine: Engine,
    trigger: str,
    dry_run: bool,
    if_due: bool,
    notes: list[str],
    progress: Callable[[int, int], None] | None,
    cleanup: contextlib.ExitStack,
    pace: int,
) -> Outcome:
    with vault.locked():
        warnings = [*notes, *filter(None, [recover(vault)])]
        unreadable: list[str] = []
        space = Workspace.load(vault, unreadable)  # the topics' snapshot (restore changes only CURRENT.md)
        cleanup.callback(space.close)
        wiped = restore(vault, space.held) if not dry_run else Vanished((), ())
        if wiped.restored:
            warnings.append(f"put back {len(wiped.restored)} entries an editor's save had removed")
        current_text = read_text(vault.current, "CURRENT.md") if vault.current.exists() else ""
        current = parse_document(current_text, buffer_items())
        # Only a run that asks whether it is due counts the buffer (a part of a long import does not).
        due = buffer_status(vault, current).due_reason if if_due else None
        if if_due and due is None:
            return Outcome(0, "", trigger, engine.provenance, skipped="not due", warnings=tuple(warnings))
        twice = drop_topic_copies(space)
        if twice.total:
            warnings.append(twice.describe(dry_run))
        trigger = due or trigger
        state, _ = read_state(vault)
        warnings += unreadable
        # A line memd adopted from the buffer, brought back unsigned by an editor's stale save, is a copy.
        adopted = adopted_lines(acks.pending(vault))
        buffered = [block for block in current.blocks if isinstance(block, Entry)]
        back = {adopted[e.full_text] for e in buffered if e.signature is None and e.full_text in adopted}
        signed = {seq for e in buffered if e.signature is not None for seq in e.signature.seq}
        filed = space.holding(signed | back)
        cleaned, dropped, changed = drop_stale_copies(current, filed, adopted)
        if dropped or changed:
            text = cleaned.render()
            if not atomic_write(vault.current, text.encode("utf-8"), unless_changed=current_text.encode("utf-8")):
                raise HandEditConflict("CURRENT.md changed while memd was reading it; starting over")
            current_text, current = text, cleaned
            warnings.append(
                f"CURRENT.md held {dropped + changed} entries a second time (filed already, or twice in the buffer: "
                "an editor saved an old copy): "
                f"dropped {dropped} identical copies, kept {changed} changed ones as new entries"
            )
        if dry_run:  # nothing is written, but what a model is shown is redacted all the same
            current_text, current = redacted_copy(current_text, current)
        else:
            current_text, current = without_secrets(vault, current_text, current, warnings)
        unsigned = sum(1 for b in current.blocks if isinstance(b, Entry) and b.signature is None) + space.unsigned()
        reserved = allocate(vault, unsigned) if unsigned and not dry_run else range(state.next_seq, state.next_seq)
    if not dry_run:
        snapshot = {"CURRENT.md": current_text if vault.current.exists() else None, **space.texts()}
        warnings += _commit_hand_edits(vault, wiped, snapshot, space)
    return _consolidate(
        vault, engine, current_text, current, space, reserved, state, trigger, dry_run, warnings, progress, pace
    )


def _consolidate(
    vault: Vault,
    engine: Engine,
    current_text: str,
    current: Document,
    space: Workspace,
    reserved: range,
    state: State,
    trigger: str,
    dry_run: bool,
    warnings: list[str],
    progress: Callable[[int, int], None] | None = None,
    pace: int = 0,
) -> Outcome:
    moment = now()
    stamp = format_time(moment)
    counter = iter(reserved) if not dry_run else itertools.count(max(state.next_seq, highest_seq(vault) + 1))
    current, adopted = adopt_unsigned(current, lambda: next(counter), stamp)
    # Before the empty buffer's early return: a rename mended needs no new entry.
    renames = follow_renames(space)
    # This round's entries only: a long import's first rounds have tens of thousands waiting.
    signed = current.signed_entries()
    items = [Item(e.signature, e.full_text) for e in itertools.islice(signed, PART_ENTRIES) if e.signature]
    if not items and not space.touched:  # copies settled in topics are written even with an empty buffer
        return Outcome(
            0, "", trigger, engine.provenance, dry_run=dry_run, skipped="the buffer is empty", warnings=tuple(warnings)
        )
    batches = batches_of(items, vault.config.buffer_tokens)
    later = 0
    if 0 < pace < len(batches):
        batches = batches[:pace]
        taken = sum(len(batch) for batch in batches)
        items, later = items[:taken], len(items) - taken
    left = later + sum(1 for _ in signed)
    epoch = state.epoch + 1
    engine.begin(f"consolidation {epoch}")
    run = Filing(warnings=warnings)
    for old, new in renames:
        run.logs.setdefault(new, []).append(f"renamed by hand from {old}")
    done = 0
    for batch in batches:
        cancel.check()
        file_batch(space, engine, batch, run, counter, stamp)
        done += len(batch)
        if progress:
            progress(done, len(items))
    cancel.check()
    # Seqs were reserved for every topic's unsigned items; a topic no block was routed to signs its own here.
    for topic_id, count in space.adopt_everywhere(counter, stamp).items():
        run.logs.setdefault(topic_id, []).append(f"signed {count} unsigned item{'' if count == 1 else 's'}")
    for notes, subject, seqs in gather_subjects(space, engine):
        if not seqs:  # the month's notes emptied and deleted: this run's lines for it go with its notes
            run.logs.setdefault(subject, []).extend(run.logs.pop(notes, []))
            continue
        # This run's supersession records of the notes that moved go with them.
        lines = run.logs.setdefault(notes, [])
        theirs = [line for line in lines if line.startswith("seq ") and line.split()[1] in seqs]
        run.logs[notes] = [line for line in lines if line not in theirs]
        count = len(seqs)
        run.logs.setdefault(subject, []).extend(theirs)
        run.logs[subject].append(f"gathered {count} note{'' if count == 1 else 's'} from {notes}")
        run.logs[notes].append(f"{count} note{'' if count == 1 else 's'} moved to {subject}")
        run.moves[:] = [replace(m, topic=subject) if m.topic == notes and m.seqs in seqs else m for m in run.moves]
    splits = [s for t in sorted(space.touched) for s in split_topic(space, engine, t, vault.config.split_tokens)]
    merges = merge_topics(space, engine, vault.config.merge_tokens, vault.config.split_tokens)
    for survivor, absorbed in merges:
        # This run's lines for the absorbed topic (its supersession records)
        # go with its entries: a deleted topic's log is never written.
        run.logs.setdefault(survivor, []).extend(run.logs.pop(absorbed, []))
        run.logs[survivor].append(f"merged topic {absorbed}")
    for topic_id, parts in splits:
        for part in parts:
            run.logs.setdefault(part, []).append(f"split from {topic_id}")
    consolidated = {seq for item in items for seq in item.seqs}
    remaining = without_entries(current, consolidated)
    final_docs = space.finish(engine, moment, run.logs, epoch)
    fallbacks = engine.drain_notes()
    run.warnings.extend(fallbacks)
    # Topics this run did not read are as they were (the catalog matched their
    # files at the snapshot): only what it read, created and the buffer need proof.
    before_seqs = space.read_seqs() + [s for item in items for s in item.seqs] + space.adopted
    after = [*final_docs.values(), remaining]
    live = {s for document in after for e in document.signed_entries() for s in e.signature.seq}  # type: ignore[union-attr]
    problems = account(before_seqs, after, run.superseded, space.elsewhere(live | set(before_seqs)))
    # An entry left in the buffer is the very entry read (``_without_entries`` keeps its
    # block): only the entries that moved, and the topics, can have changed their words.
    staying = {id(block) for block in remaining.blocks}
    moved = replace(current, blocks=tuple(block for block in current.blocks if id(block) not in staying))
    altered = reworded([moved, *space.read_documents()], list(final_docs.values()))
    if altered:
        problems.append(f"the words of seqs {SeqSet.of(altered)} would change")
    if problems and vault.current.exists():
        # Another consolidation that filed this buffer first (two started at once) makes
        # every seq read here be held twice: a run on a stale buffer, not damage. Its
        # next attempt reads the buffer as it is now.
        appended_since(current_text, read_text(vault.current, "CURRENT.md"))
    if problems:
        from memd.vault.lint import duplicate_places

        where = duplicate_places(vault) if any("more than one entry" in p for p in problems) else []
        shown = f" (at {', '.join(where)}; `memd lint` lists them all)" if where else ""
        kept = _keep_refused(vault, space, final_docs, current_text, remaining, problems)
        raise ConsolidationError("consolidation refused, nothing was changed: " + "; ".join(problems) + shown + kept)
    outcome = Outcome(
        entries=len(consolidated),
        seqs=str(SeqSet.of(consolidated)) if consolidated else "",
        trigger=trigger,
        engine=engine.provenance,
        moves=tuple(run.moves),
        new_topics=tuple(sorted(space.created - space.deleted)),
        touched_topics=tuple(sorted(space.touched - space.deleted)),
        superseded=tuple(run.superseded),
        replaced=tuple(run.replaced.items()),
        splits=tuple(splits),
        merges=tuple(merges),
        dry_run=dry_run,
        warnings=tuple(run.warnings),
        consolidation=epoch,
        fallbacks=offline_steps(fallbacks),
        filed=len(items),
        left=left,
    )
    if dry_run:
        return outcome
    cancel.check()  # the last safe point: nothing has been written yet
    changes = space.changes(final_docs)
    written = list(changes)
    with vault.locked():
        # The proof above took every topic this run does not rewrite (the journal
        # compares those) as the snapshot read it; one read half-saved in place by
        # an editor, or edited since, is read again in a new attempt.
        rewritten = {change.path for change in changes}
        changed = [rel for rel in space.changed_since_load() if rel not in rewritten]
        if changed:
            raise HandEditConflict(
                f"{changed[0]} was edited while memd was consolidating; nothing was changed "
                "(your edit is kept; consolidation will run again)"
            )
        now_text = read_text(vault.current, "CURRENT.md") if vault.current.exists() else ""
        tail = appended_since(current_text, now_text)
        new_current = remaining.render() + tail
        disk_state, _ = read_state(vault)
        # Built from the state on disk, so every device's seq counter is kept (ARCHITECTURE.md §7).
        new_state = replace(
            advance_past(disk_state, reserved).advanced(0, state.next_seq),
            epoch=max(disk_state.epoch, state.epoch) + 1,
            last_consolidation=stamp,
            buffer_since=disk_state.buffer_since if holds_signed(remaining, tail) else None,
        )
        outcome = replace(outcome, consolidation=new_state.epoch)
        # verify holds memd's commit to the words acknowledged, as a person left them in the buffer.
        entries = entries_of(current, consolidated)
        hand = {seq: entries[seq] for seq in adopted if seq in entries}
        acks.reread(vault, {seq: e for seq, e in entries.items() if seq not in hand}, hand, stamp)
        changes.append(journal_mod.FileChange("CURRENT.md", now_text, new_current))
        state_before = vault.state_path.read_text(encoding="utf-8") if vault.state_path.is_file() else None
        changes.append(journal_mod.FileChange(".memd/state.json", state_before, render_state(new_state)))
        journal_mod.apply(vault, journal_mod.Journal(tuple(changes), commit_message(outcome)))
        space.wrote(final_docs, written)
    sha, note = finish_commit(vault)
    tokens = sum(count_tokens(item.text) for item in items)  # model costs are put per 1,000 of these
    ledger.note_intake(
        vault.meta_dir / "ledger.jsonl",
        {"event": "consolidation", "consolidation": new_state.epoch, "buffer_tokens": tokens},
    )
    return replace(outcome, commit=sha, warnings=(*run.warnings, *filter(None, [note])))


def _keep_refused(
    vault: Vault,
    space: Workspace,
    final: dict[str, Document],
    current_text: str,
    remaining: Document,
    problems: list[str],
) -> str:
    """`` (the refused result is kept in PATH)``, or nothing when it cannot be kept:
    the refusal itself must reach the person whatever the disk says."""
    changes = (FileChange("CURRENT.md", current_text, remaining.render()), *space.changes(final))
    try:
        return f" (the refused result is kept in {journal_mod.keep_refused(vault, changes, problems)})"
    except MemdError:
        return ""


def _commit_hand_edits(vault: Vault, wiped: Vanished, snapshot: dict[str, str | None], space: Workspace) -> list[str]:
    """The person's pending edits as their own commit, with the content memd
    is about to consolidate from (so none of it rides in memd's commit). A
    topic held back for a possible secret is left alone by this consolidation
    too: memd's own commit would carry it."""
    if blocked(vault):
        return []
    try:
        edits = commit_hand_edits(vault, wiped.removed_span, snapshot)
    except GitError as err:
        return [f"hand edits not committed: {err}"]
    space.skipped.update(doc_id(rel) for rel in edits.held if classify(rel) == "topic")
    if wiped.removed:
        with vault.locked():
            acks.settle(vault, wiped.removed)
    return edits.warnings()
