"""How low evidence concentration can go at a given topic size: each LoCoMo
conversation's turns split by speaker, then each speaker's turns cut into
pieces of at most ``--cap`` tokens by meaning (k-means on MiniLM vectors,
farthest-point seeds, capacity-bounded assignment), or not cut at all
(``--cap 0``: one topic per speaker, the bound for topics by person).
Prints the concentration per conversation and on the two halves of the slice.

Usage: python bench/concentration_bound.py ../shared/data/locomo-dev.json --cap 3750
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from memd.app.concentration import concentration
from memd.app.evaluate import load_locomo
from memd.core.tokens import count_tokens
from memd.index.meaning import Meaning


def kmeans(rows: Any, weights: Any, k: int, cap: float, rounds: int = 20) -> Any:
    import numpy as np

    n = len(rows)
    if k <= 1:
        return np.zeros(n, dtype=int)
    seeds = [rows[0]]
    for _ in range(k - 1):
        nearest = np.max(np.stack([rows @ seed for seed in seeds]), axis=0)
        seeds.append(rows[int(np.argmin(nearest))])
    centres = np.stack(seeds)
    labels = np.zeros(n, dtype=int)
    for _ in range(rounds):
        scores = rows @ centres.T
        load = np.zeros(k)
        for i in np.argsort(-scores.max(axis=1)):
            choices = np.argsort(-scores[i])
            for j in choices:
                if load[j] + weights[i] <= cap or j == choices[-1]:
                    labels[i] = j
                    load[j] += weights[i]
                    break
        centres = np.stack([rows[labels == j].sum(axis=0) for j in range(k)])
        centres /= np.linalg.norm(centres, axis=1, keepdims=True) + 1e-9
    return labels


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser()
    parser.add_argument("file", type=Path)
    parser.add_argument("--cap", type=float, default=3750, help="tokens per piece; 0: one topic per speaker")
    args = parser.parse_args()
    meaning = Meaning("minilm-l6", None)
    if not meaning.available:
        raise SystemExit("the embedding model is not installed")
    found = []
    for conversation in load_locomo(args.file):
        turns = [t for t in conversation.turns if t.text]
        texts = [f"{t.speaker}: {t.text}" for t in turns]
        vectors = meaning.vectors(texts)
        topic: dict[str, str] = {}
        for speaker in sorted({t.speaker for t in turns}):
            members = [i for i, t in enumerate(turns) if t.speaker == speaker]
            weights = np.array([count_tokens(texts[i]) for i in members], dtype=float)
            k = 1 if not args.cap else max(1, math.ceil(weights.sum() / args.cap))
            labels = kmeans(vectors[members], weights, k, args.cap)
            for i, label in zip(members, labels, strict=True):
                topic[turns[i].dia_id] = f"{speaker}-{label}"
        values = concentration(topic, conversation.questions)
        found.append(sum(values) / len(values))
        print(f"{conversation.sample_id}: {found[-1]:.3f}")
    print(f"cap {args.cap:g}: conversations 1-3 {sum(found[:3]) / 3:.3f}, 4-5 {sum(found[3:]) / 2:.3f}")


if __name__ == "__main__":
    main()
