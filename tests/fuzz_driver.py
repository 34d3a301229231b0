"""Runs memd commands in one process, the way the ``memd`` command runs them,
and reports each one as JSON: its exit code, output, seconds, and the
traceback if one escaped (what a person would have seen on their terminal).

    python -m tests.fuzz_driver VAULT '[["lint"], ["search", "oat"]]'

The fuzz suite (test_fuzz_faults.py) starts one of these per malformed input,
so a hang is caught by the process's time limit and a crash cannot take the
test run with it.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
import traceback


def run(vault: str, args: list[str]) -> dict[str, object]:
    from memd.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    escaped: str | None = None
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["--vault", vault, *args], prog_name="memd", standalone_mode=True)
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except BaseException:  # what would reach the person as a traceback
            escaped = traceback.format_exc()
            code = -1
    return {
        "args": args,
        "code": code,
        "stdout": out.getvalue()[-4000:],
        "stderr": err.getvalue()[-4000:],
        "seconds": round(time.monotonic() - started, 3),
        "traceback": escaped,
    }


def main() -> None:
    vault, commands = sys.argv[1], json.loads(sys.argv[2])
    results = [run(vault, args) for args in commands]
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
