"""Where notes the embedding model cannot read go in a vault that already has topics:
pairwise precision, recall and F1 of the topics they land in against the subjects
they were written from.

Not a test: run by hand and copy the figures into docs/benchmarks.md.

    python bench/bench_unread_routing.py
    python bench/bench_unread_routing.py --against HEAD~3

The vault and the buffer are bench_consolidate_scale.py's (ten topics of notes in
made-up words; a buffer of about 1,000 tokens, half on those topics' subjects and
half on six new ones, every note ending ", number NNNN"), consolidated once. Two
notes of one subject should share a topic and two of different subjects should
not (pairwise F1 over the buffer's notes); also counted: notes of a known subject
filed in that subject's topic, and notes of a new subject filed in an old topic.
With ``--against REV``, the same runs with that revision's memd package too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from revision import extract  # noqa: E402

_RUN = r"""
import json, re, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import bench_consolidate_scale as scale
from memd.app.init import init_vault
from memd.consolidation.run import consolidate
from memd.vault.buffer import append_entries

root = Path(sys.argv[1])
scale.build_template(root, 10)
vault = init_vault(root).vault
labelled = scale.labelled_notes(1000)
notes = [note for note, _ in labelled]
truth = {note.text: subject for note, subject in labelled}
append_entries(vault, notes)
outcome = consolidate(vault)
placed = {}
for path in vault.topics_dir.glob("*.md"):
    for line in path.read_text(encoding="utf-8").splitlines():
        found = re.match(r"- <seq=[^>]*> (.*)", line)
        if found and found.group(1) in truth:
            placed[found.group(1)] = path.stem
print(json.dumps({"truth": truth, "placed": placed, "touched": len(outcome.touched_topics)}))
"""


def score(truth: dict[str, str], placed: dict[str, str]) -> dict[str, float]:
    texts = list(truth)
    tp = fp = fn = 0
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            same_subject, same_topic = truth[a] == truth[b], placed.get(a) == placed.get(b)
            tp += same_subject and same_topic
            fp += same_topic and not same_subject
            fn += same_subject and not same_topic
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    home = sum(1 for text, subject in truth.items() if subject.startswith("subject") and placed.get(text) == subject)
    strays = sum(1 for t, s in truth.items() if s.startswith("new") and placed.get(t, "").startswith("subject"))
    known = sum(1 for subject in truth.values() if subject.startswith("subject"))
    return {"precision": precision, "recall": recall, "f1": f1, "home": home, "known": known, "strays": strays}


def measure(name: str, code: Path, folder: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(code)}
    folder.mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(folder / "vault"), str(REPO / "bench")],
        env=env,
        cwd=folder,  # `-c` puts the working folder first on the path, where no other memd is
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    s = score(result["truth"], result["placed"])
    print(
        f"{name:14s} {len(result['truth'])} notes, {result['touched']} topics touched: pairwise precision "
        f"{s['precision']:.2f}, recall {s['recall']:.2f}, F1 {s['f1']:.2f}; notes of a known subject in its "
        f"topic {s['home']:.0f}/{s['known']:.0f}; notes of a new subject in an old topic {s['strays']:.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", metavar="REV", help="also run the memd package at this git revision")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memd-unread-") as folder:
        root = Path(folder)
        codes = {"this checkout": REPO}
        if args.against:
            codes[args.against] = extract(args.against, root / "against")
        for n, (name, code) in enumerate(codes.items()):
            measure(name, code, root / f"run{n}")


if __name__ == "__main__":
    main()
