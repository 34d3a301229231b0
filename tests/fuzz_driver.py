"""Runs memd commands in one process, the way the ``memd`` command runs them,
and reports each one as JSON: its exit code, output, the CPU seconds it used
(its own and its git children's: work done, whatever the machine's load), and
the traceback if one escaped (what a person would have seen on their terminal).

    python -m tests.fuzz_driver VAULT '[["lint"], ["search", "oat"]]'

The fuzz suite (test_fuzz_faults.py) starts one of these per malformed input,
so a hang is caught by the process's time limit and a crash cannot take the
test run with it.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import time
import traceback


def cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (git)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run(vault: str, args: list[str]) -> dict[str, object]:
    from memd.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    escaped: str | None = None
    started, cpu = time.monotonic(), cpu_seconds()
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
        "seconds": round(time.monotonic() - started, 3),  # wall clock: shown, never asserted on
        "cpu_seconds": round(cpu_seconds() - cpu, 3),
        "traceback": escaped,
    }


def main() -> None:
    vault, commands = sys.argv[1], json.loads(sys.argv[2])
    results = [run(vault, args) for args in commands]
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
