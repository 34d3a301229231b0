"""The ``memd`` package as it was at a revision, for a benchmark that runs it side by side
with this checkout (``PYTHONPATH`` to the folder, run from outside the checkout)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def extract(rev: str, into: Path) -> Path:
    """The ``memd`` package as it was at ``rev``, in ``into`` (a new folder)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "memd"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into
