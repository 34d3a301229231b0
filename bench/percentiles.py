"""One definition of a percentile for every bench script, so their p95s compare.

The nearest rank: the value at ``share`` of the way from the smallest to the
largest measurement (rounded to a rank), one of the measurements itself.
"""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], share: float) -> float:
    """``percentile(times, 0.95)``: the p95 of ``times`` (``share`` from 0 to 1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]
