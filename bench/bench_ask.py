"""CPU of the offline `memd ask` over a LoCoMo conversation's questions, this
checkout against another revision, on the same consolidated vault.

Not a test: run by hand and copy the figures into docs/benchmarks.md.

    python bench/bench_ask.py ../shared/data/locomo-dev.json --against 8e4f600^
    python bench/bench_ask.py FILE --conversation 4 --repeat 5

The conversation is ingested and consolidated once, by this checkout. Each
revision then gets a copy of that vault (its index built by the revision
itself, outside the timing), asks every question once to warm up, and then
``--repeat`` times; the median CPU (``time.process_time`` of that process) of
a round of every question is printed, and the ratio of the two. The revisions
run one after the other, alternating, so a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from revision import extract

REPO = Path(__file__).resolve().parent.parent

_ASK = r"""
import json, sys, time
from pathlib import Path
from memd.ask.offline import ask
from memd.index.store import IndexStore
from memd.vault.vault import Vault

vault = Vault(Path(sys.argv[1]))
questions = json.loads(Path(sys.argv[2]).read_text())
store = IndexStore(vault)
for question in questions:  # builds the index and warms every cache a later ask would have
    ask(vault, question, store=store)
start = time.process_time()
found = sum(ask(vault, question, store=store).found for question in questions)
print(json.dumps({"cpu": time.process_time() - start, "found": found}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path)
    parser.add_argument("--conversation", type=int, default=1, help="1-based (default 1)")
    parser.add_argument("--against", metavar="REV", required=True, help="the revision to compare with")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from memd.app.evaluate import _consolidate, _ingest
    from memd.ingest.locomo import load_locomo

    conversation = load_locomo(args.file)[args.conversation - 1]
    questions = [q.question for q in (*conversation.questions, *conversation.unanswerable)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="memd-ask-") as folder:
        root = Path(folder)
        built = root / "built"
        _consolidate(_ingest(built, conversation))
        (root / "questions.json").write_text(json.dumps(questions), encoding="utf-8")
        codes = {"this checkout": REPO, args.against: extract(args.against, root / "against")}
        cpu: dict[str, list[float]] = {name: [] for name in codes}
        found: dict[str, int] = {}
        for n in range(args.repeat):
            for k, (name, code) in enumerate(codes.items()):
                vault = root / f"vault-{k}-{n}"
                shutil.copytree(built, vault, ignore=shutil.ignore_patterns("index"))
                env["PYTHONPATH"] = str(code)
                done = subprocess.run(
                    [sys.executable, "-c", _ASK, str(vault), str(root / "questions.json")],
                    env=env,
                    cwd=root,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                result = json.loads(done.stdout.strip().splitlines()[-1])
                cpu[name].append(result["cpu"])
                found[name] = result["found"]
        print(f"{len(questions)} questions of conversation {args.conversation}, {args.repeat} rounds each")
        for name, values in cpu.items():
            each = ", ".join(f"{v:.2f}" for v in values)
            print(f"  {name}: median {statistics.median(values):.2f} s CPU ({each}); answered {found[name]}")
        ratio = statistics.median(cpu["this checkout"]) / statistics.median(cpu[args.against])
        print(f"  this checkout / {args.against}: {ratio:.2f}x")


if __name__ == "__main__":
    main()
