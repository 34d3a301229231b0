"""Helpers for the hostile-input tests: run memd as a person would and check
that it answered with an exit code and one line, never a traceback or a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import Result

from memd.vault.vault import Vault

REPO = Path(__file__).resolve().parent.parent


def run_memd(
    vault: Vault | Path, *args: str, input: str | None = None, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``memd --vault VAULT ARGS`` in its own process (a hang fails the test at ``timeout``)."""
    root = vault.root if isinstance(vault, Vault) else vault
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "memd", "--vault", str(root), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
    )


def assert_clean(proc: subprocess.CompletedProcess[str] | Result, *names: str) -> str:
    """Exit 0 or 1; no traceback; an error is one line naming one of ``names``.
    Returns the error line ("" when the command succeeded)."""
    if isinstance(proc, Result):
        code, out, err = proc.exit_code, proc.stdout, proc.stderr
        assert proc.exception is None or isinstance(proc.exception, SystemExit), repr(proc.exception)
    else:
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    assert code in (0, 1), f"exit {code}: {out}{err}"
    assert "Traceback" not in out + err, out + err
    if code == 0:
        return ""
    errors = [line for line in err.splitlines() if line.startswith("memd: ")]
    if not errors:
        return ""  # exit 1 with findings on stdout (lint, verify)
    assert len(errors) == 1 and len(err.strip().splitlines()) <= 2, err
    if names:
        assert any(name in errors[0] for name in names), (names, errors[0])
    return errors[0]
