"""A words-only `memd search` (no model) imports no numpy, and ranks as a
process with numpy loaded does: MMR's plain-Python order is numpy's to the bit."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

from memd.index import diversify
from memd.vault.vault import Vault

from .conftest import REPO, Memd

WORDS = "lake camp trip kid coast road vase pottery paint sunset eagle ridge trail".split()


def pools(seed: int) -> tuple[list[tuple[str, ...]], list[float], float]:
    rng = random.Random(seed)
    size = rng.randint(3, 120)
    vocabulary = WORDS[: rng.randint(1, len(WORDS))] + [f"w{n}" for n in range(rng.randint(0, 200))]
    words = [tuple(dict.fromkeys(rng.choices(vocabulary, k=rng.randint(0, 12)))) for _ in range(size)]
    scores = [rng.choice([1.0, 0.5, round(rng.random(), rng.randint(1, 6))]) for _ in range(size)]
    if seed % 3 == 0:
        scores = [np.float32(score) for score in scores]  # type: ignore[misc]
    top = max(scores) or 1.0
    relevance = [score / top for score in scores]
    return words, relevance, rng.choice([0.0, 0.15, 0.3, 0.5, 1.0, rng.random()])


@pytest.mark.parametrize("seed", range(300))
def test_plain_python_mmr_picks_numpys_order(seed: int) -> None:
    words, relevance, weight = pools(seed)
    assert diversify.mmr_python(words, relevance, weight) == diversify.mmr_numpy(words, relevance, weight)


def test_overlaps_are_numpys_float32_quotients() -> None:
    words = [tuple(f"a{n}" for n in range(k)) for k in range(1, 60)] + [("x",) * 0]
    relevance = [1.0 - n / 1000 for n in range(len(words))]
    for weight in (0.3, 0.7, 1e-7, 3.0):
        assert diversify.mmr_python(words, relevance, weight) == diversify.mmr_numpy(words, relevance, weight)


SCRIPT = """
import json, sys
from memd.cli.launch import main
sys.argv[0] = "memd"
if sys.argv[-1] == "numpy":
    import numpy
    sys.argv.pop()
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
print("numpy" in sys.modules)
"""


def search(vault: Vault, query: str, *extra: str) -> tuple[str, bool]:
    env = {
        **os.environ,
        "MEMD_EMBEDDING": "none",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "--vault", str(vault.root), "search", "--json", query, *extra],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    out, _, loaded = done.stdout.rstrip("\n").rpartition("\n")
    return out, loaded == "True"


def test_a_words_only_search_imports_no_numpy_and_ranks_alike(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_EMBEDDING", "none")
    for n in range(60):
        memd("add", f"Camping trip {n} at the lake with the kids, {WORDS[n % len(WORDS)]} and {WORDS[(n * 7) % 13]}")
    memd("consolidate")
    memd("search", "lake")  # the index, built
    for query in ("camping at the lake", "kids trip pottery", "sunset ridge trail"):
        plain, loaded = search(memd.vault, query)
        assert not loaded, query
        with_numpy, loaded = search(memd.vault, query, "numpy")
        assert loaded and plain == with_numpy, query
