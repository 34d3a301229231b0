"""Agent and git hooks: what they run, and installers that merge them in.

- Claude Code: a ``SessionEnd`` (optionally ``Stop``) hook runs
  ``memd --vault V hook claude-capture``, which copies the session's JSONL
  transcript into ``V/inbox/claude-<session id>.jsonl``; ingestion takes it
  from there. The name is stable, so a later capture of the same session
  replaces the earlier one instead of adding a copy.
- git: a ``pre-commit`` script runs ``memd lint`` on the staged vault files
  and blocks the commit when it reports an error.

Installed commands name the Python that runs memd now (``python -m memd``),
because hooks run with a minimal PATH (GUI git clients, the agent's shell)
where a virtualenv's ``memd`` is often missing. The copies under ``hooks/``
in the repository are these same texts with plain ``memd``, for people who
install by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.core.atomic import atomic_write
from memd.core.errors import MemdError
from memd.git.command import run_git
from memd.vault.vault import Vault

CAPTURE = "hook claude-capture"
CLAUDE_EVENTS = ("SessionEnd", "Stop")
GIT_MARK = "memd pre-commit hook"
CHAINED = "pre-commit.local"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class HookError(MemdError):
    """A hook could not be installed or could not do its work."""


@dataclass(frozen=True)
class Change:
    """What an installer did to one file."""

    path: Path
    action: str  # "created", "updated", "unchanged"
    details: tuple[str, ...] = ()


def memd_command() -> str:
    """The shell words that run this memd, whatever PATH the hook gets."""
    return shlex.join([sys.executable, "-m", "memd"])


# -- Claude Code ---------------------------------------------------------------


def capture_name(session_id: str) -> str:
    safe = _UNSAFE.sub("-", session_id).strip("-")[:80]
    if not safe:
        safe = hashlib.sha256(session_id.encode()).hexdigest()[:16]
    return f"claude-{safe}.jsonl"


def capture_claude(vault: Vault, payload: Mapping[str, Any]) -> tuple[Path, bool]:
    """Copy the transcript named in a Claude Code hook payload into the inbox.

    Written to a temp file in the inbox and renamed, so the ingester never
    sees half a transcript. Returns the inbox path and whether it changed.
    """
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript.strip():
        raise HookError("the hook input has no transcript_path")
    source = Path(transcript).expanduser()
    try:
        data = source.read_bytes()
    except OSError as err:
        raise HookError(f"cannot read the transcript {source}: {err.strerror or err}") from None
    session = payload.get("session_id")
    name = capture_name(session if isinstance(session, str) and session.strip() else source.stem)
    target = vault.inbox_dir / name
    if target.is_file() and target.read_bytes() == data:
        return target, False
    atomic_write(target, data)
    return target, True


def claude_hook_command(vault: Vault) -> str:
    return f"{memd_command()} --vault {shlex.quote(str(vault.root))} {CAPTURE}"


def mcp_config(vault_path: str, memd: tuple[str, ...] = (sys.executable, "-m", "memd")) -> dict[str, Any]:
    """A ``.mcp.json`` entry (Claude Code, Cursor and others read this shape) that starts ``memd mcp``."""
    command, *args = memd
    return {"mcpServers": {"memd": {"command": command, "args": [*args, "--vault", vault_path, "mcp"]}}}


def claude_settings_snippet(command: str, events: tuple[str, ...] = ("SessionEnd",)) -> dict[str, Any]:
    handler = {"type": "command", "command": command, "timeout": 60}
    return {"hooks": {event: [{"hooks": [dict(handler)]}] for event in events}}


def install_claude(
    vault: Vault, settings_path: Path, events: tuple[str, ...] = ("SessionEnd",), *, dry_run: bool = False
) -> Change:
    """Merge the capture hook into a Claude Code settings file.

    Other settings and hooks are kept; a memd capture hook that is already
    there is updated in place (say, to point at another vault), never doubled.
    """
    unknown = [e for e in events if e not in CLAUDE_EVENTS]
    if unknown or not events:
        raise HookError(f"Claude Code events memd can hook: {', '.join(CLAUDE_EVENTS)}")
    command = claude_hook_command(vault)
    existed = settings_path.exists()
    try:
        text = settings_path.read_text(encoding="utf-8") if existed else ""
        settings = json.loads(text) if text.strip() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HookError(f"{settings_path} is not readable JSON ({err}); fix it first, nothing was changed") from None
    if not isinstance(settings, dict) or not isinstance(settings.get("hooks", {}), dict):
        raise HookError(f'{settings_path}: expected a JSON object with a "hooks" object; nothing was changed')
    hooks = settings.setdefault("hooks", {})
    details: list[str] = []
    for event in events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise HookError(f"{settings_path}: hooks.{event} is not a list; nothing was changed")
        found = False
        for group in groups:
            for handler in group.get("hooks", []) if isinstance(group, dict) else []:
                if isinstance(handler, dict) and CAPTURE in str(handler.get("command", "")):
                    if handler["command"] != command:
                        details.append(f"~ hooks.{event}: {handler['command']} -> {command}")
                        handler["command"] = command
                    found = True
        if not found:
            groups.append(claude_settings_snippet(command, (event,))["hooks"][event][0])
            details.append(f"+ hooks.{event}: {command}")
    if not details:
        return Change(settings_path, "unchanged")
    if not dry_run:
        atomic_write(settings_path, json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
    return Change(settings_path, "updated" if existed else "created", tuple(details))


# -- git -------------------------------------------------------------------------

PRE_COMMIT = """\
#!/bin/sh
# {mark}: lint the vault files staged for this commit and block the
# commit when `memd lint` reports an error. Installed by `memd hooks install git`.
# By hand: copy this file to .git/hooks/pre-commit, make it executable and set
# VAULT to the vault's folder inside the repository. Skip it once with
# `git commit --no-verify`. It checks the files as they are on disk.
VAULT={vault}
run_memd() {{ {memd} "$@"; }}

# A pre-commit hook that was here before memd's runs first (see --chain).
if [ -x "$(dirname "$0")/{chained}" ]; then
    "$(dirname "$0")/{chained}" "$@" || exit $?
fi

cd "$(git rev-parse --show-toplevel)" || exit 1
set --
staged=$(git -c core.quotePath=false diff --cached --name-only --diff-filter=ACM -- \\
    "$VAULT/*.md" "$VAULT/*.markdown") || exit 1
while IFS= read -r file; do
    [ -n "$file" ] && set -- "$@" "$file"
done <<EOF
$staged
EOF
[ $# -eq 0 ] && exit 0
if ! run_memd lint "$@"; then
    echo "memd: the commit was stopped; fix the problems above (or skip the check: git commit --no-verify)" >&2
    exit 1
fi
"""


def render_pre_commit(vault_rel: str = ".", memd: str = "memd") -> str:
    return PRE_COMMIT.format(mark=GIT_MARK, vault=shlex.quote(vault_rel), memd=memd, chained=CHAINED)


def _git(vault: Vault, *args: str) -> str:
    done = run_git(vault, *args)
    if done.returncode != 0:
        raise HookError(f"{vault.root} is not in a git repository (run `git init` there first)")
    return done.stdout.strip()


def install_git(vault: Vault, *, chain: bool = False, dry_run: bool = False) -> Change:
    """Write the pre-commit hook into the vault's repository.

    A pre-commit hook that is not memd's is left alone unless ``chain``: then
    it moves to ``pre-commit.local`` and memd's hook runs it first.
    """
    top = Path(_git(vault, "rev-parse", "--show-toplevel"))
    hooks_dir = Path(_git(vault, "rev-parse", "--git-path", "hooks"))
    if not hooks_dir.is_absolute():
        hooks_dir = vault.root / hooks_dir
    vault_rel = Path(os.path.relpath(vault.root, top.resolve())).as_posix()
    script = render_pre_commit(vault_rel, memd_command())
    target = hooks_dir / "pre-commit"
    details: list[str] = []
    action = "created"
    if target.exists():
        current = target.read_text(encoding="utf-8", errors="replace")
        if current == script and os.access(target, os.X_OK):
            return Change(target, "unchanged")
        if GIT_MARK in current:
            action = "updated"
            details.append(f"~ {target.name}: memd's hook rewritten (vault {vault_rel})")
        elif not chain:
            raise HookError(
                f"{target} already exists and is not memd's; nothing was changed. Rerun with --chain to keep it "
                f"(it moves to {CHAINED} and runs first), or add this line to it: {memd_command()} lint <files>"
            )
        elif (hooks_dir / CHAINED).exists():
            raise HookError(f"both {target} and {hooks_dir / CHAINED} exist; merge them by hand")
        else:
            action = "updated"
            details.append(f"> {target.name} -> {CHAINED} (your hook, now run first)")
            if not dry_run:
                os.replace(target, hooks_dir / CHAINED)
    details.append(f"+ {target.name}: memd lint on staged files under {vault_rel}/")
    if not dry_run:
        atomic_write(target, script)
        target.chmod(0o755)
    return Change(target, action, tuple(details))


# -- agents ------------------------------------------------------------------------

AGENTS_SNIPPET = """\
## Long-term memory (memd)

The user's long-term memory is a memd vault: plain Markdown notes that persist
across sessions. Use it; do not guess what you could look up.

- Before answering anything that depends on the user's past (preferences,
  people, plans, decisions, project history), ask the memory:
  `memd ask "how does Dana take her coffee?"` in the shell, or the
  `memory_ask` / `memory_search` MCP tools. Cite what you use as `path:line`.
- When the user tells you something worth remembering later, or you settle a
  decision together, save it as one self-contained sentence: the
  `memory_add` MCP tool, or `memd add --source user "Dana takes oat milk."`
  (use `--source ai` for your own conclusions).
- When something the memory holds has changed or is wrong, replace it rather
  than adding a contradiction: the `memory_update` MCP tool takes its seq, the
  fact as it is now and why (the old value stays on record). Remove what
  should not be kept with `memory_forget` or `memd forget SEQ`.
- Never store secrets, credentials or passing chatter. Do not edit files under
  `.memd/`; other vault files may be edited by hand, memd keeps the edits.
- More tools: `memd search WORDS`, `memd grep REGEX`,
  `memd read topics/<id>.md:START-END`, `memd list`.
"""
