"""How well consolidation files notes by what they are about.

Adds the notes of ``bench/data/notes/notes.txt`` (one person's notes, each
labelled with the subject a person would file it under; memd never sees the
label) to a fresh vault in order, half a day apart, consolidates after every
``--every`` notes, and compares the topics memd made with the labels:
B-cubed precision (how much of a note's topic shares its subject), recall
(how much of its subject shares its topic) and F1, the number of topics, and
each topic's title with the subjects of its notes (``--json`` adds the notes
themselves, each as "subject | text"). "Titles named" is how
well titles name what their topics hold: of each topic of two notes or more,
the share of its notes that say a word of its title, averaged over topics
("Atlas and invoices" names 12 of 12 notes on the Atlas launch; "Events and
Dana", 4 of 12).

Usage: python bench/bench_routing.py [NOTES] [--every 30] [--grouping words|meaning] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

NOTES = Path(__file__).parent / "data" / "notes" / "notes.txt"


def load(path: Path) -> list[tuple[str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            subject, _, text = line.partition(" | ")
            rows.append((subject.strip(), text.strip()))
    return rows


def bcubed(found: dict[str, str], gold: dict[str, str]) -> tuple[float, float]:
    """Mean precision and recall over notes of their topic against their subject."""
    by_topic: dict[str, set[str]] = {}
    by_subject: dict[str, set[str]] = {}
    for note, topic in found.items():
        by_topic.setdefault(topic, set()).add(note)
    for note, subject in gold.items():
        by_subject.setdefault(subject, set()).add(note)
    precision = recall = 0.0
    for note, topic in found.items():
        same = by_topic[topic] & by_subject[gold[note]]
        precision += len(same) / len(by_topic[topic])
        recall += len(same) / len(by_subject[gold[note]])
    return precision / len(found), recall / len(found)


def named(title: str, texts: list[str]) -> float:
    """The share of ``texts`` that say a word of ``title`` (as memd's word index reads words)."""
    from memd.engine.text import terms

    wanted = set(terms(title))
    # A note headed "Dentist:" says "dentist", and search finds it by that word.
    return sum(1 for text in texts if wanted & set(terms(text, label=True))) / len(texts)


def topic_of_seq(vault, note_of_seq: dict[int, str]) -> dict[str, str]:
    """Each note -> the topic file whose entries name its seq."""
    found: dict[str, str] = {}
    for path in vault.topic_files():
        for located in vault.read(path).signed():
            signature = located.entry.signature
            for seq in signature.seq if signature else ():
                if seq in note_of_seq:
                    found[note_of_seq[seq]] = path.name
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notes", nargs="?", type=Path, default=NOTES, help="labelled notes (default: %(default)s)")
    parser.add_argument("--every", type=int, default=30, help="consolidate after this many notes")
    parser.add_argument("--grouping", choices=("words", "meaning"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.grouping:
        os.environ["MEMD_GROUPING"] = args.grouping

    from memd.app.init import init_vault
    from memd.consolidation.run import consolidate
    from memd.vault.buffer import NewEntry, append_entries

    notes = load(args.notes)
    gold = {f"note-{n}": subject for n, (subject, _) in enumerate(notes)}
    start = datetime(2026, 9, 1, 8, 0)
    with tempfile.TemporaryDirectory(prefix="memd-routing-") as folder:
        vault = init_vault(Path(folder) / "vault").vault
        # Plain notes, as `memd add` writes them (no `src=`, which marks a transcript's
        # turns and so makes a note's "Label:" read as a speaker); known by seq.
        note_of_seq: dict[int, str] = {}
        for first in range(0, len(notes), args.every):
            chunk = [
                NewEntry(text, (start + timedelta(hours=12 * n)).strftime("%Y-%m-%dT%H:%M"), "user")
                for n, (_, text) in enumerate(notes[first : first + args.every], start=first)
            ]
            for n, added in enumerate(append_entries(vault, chunk), start=first):
                note_of_seq[added.seq] = f"note-{n}"
            consolidate(vault, trigger="manual")
        found = topic_of_seq(vault, note_of_seq)
        titles = {path.name: vault.read(path).title() or "" for path in vault.topic_files()}
    precision, recall = bcubed(found, gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    members: dict[str, Counter[str]] = {}
    held: dict[str, list[str]] = {}
    filed: dict[str, list[str]] = {}
    for note, topic in found.items():
        members.setdefault(topic, Counter())[gold[note]] += 1
        held.setdefault(topic, []).append(notes[int(note.removeprefix("note-"))][1])
        filed.setdefault(topic, []).append(f"{gold[note]} | {held[topic][-1]}")
    shares = [named(titles.get(topic, ""), texts) for topic, texts in held.items() if len(texts) >= 2]
    report = {
        "notes": len(notes),
        "filed": len(found),
        "subjects": len(set(gold.values())),
        "topics": len(members),
        "single_note_topics": sum(1 for c in members.values() if sum(c.values()) == 1),
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "titles_named": round(sum(shares) / len(shares), 4) if shares else 0.0,
        "by_topic": {
            topic: {"title": titles.get(topic, ""), "subjects": dict(counts.most_common()), "notes": filed[topic]}
            for topic, counts in sorted(members.items())
        },
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(
        f"{report['filed']} of {report['notes']} notes in {report['topics']} topics "
        f"({report['single_note_topics']} of one note) for {report['subjects']} subjects: "
        f"B-cubed precision {precision:.3f}, recall {recall:.3f}, F1 {f1:.3f}; "
        f"titles named {report['titles_named']:.3f}"
    )
    for topic, row in report["by_topic"].items():
        subjects = ", ".join(f"{s} {c}" for s, c in row["subjects"].items())
        print(f"  {topic}  '{row['title']}': {subjects}")


if __name__ == "__main__":
    main()
