"""`memd add` and `memd search` as hooks, scripts and agents run them: the
plain command line is read without click (a search then asks the daemon), and
gives what the click command gives; anything else goes to the click command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.app import Memory
from memd.app.init import init_vault
from memd.cli.launch import Command, read_command
from memd.daemon.serve import Server
from memd.vault.vault import Vault

from .conftest import Memd


def memd_process(
    *args: str, stdin: str = "", cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``memd ARGS`` as its own process, the way the installed script runs it
    (``-c CODE ARGS``: that code in its place); ``env``: variables added to the environment."""
    command = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "memd", *args]
    environ = {**os.environ, **(env or {})}
    return subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=cwd, env=environ)


def without_times(text: str) -> str:
    return re.sub(r"time=[0-9TZ:-]+", "time=T", text)


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["add", "Flat white"], Command("add", "Flat white", {}, frozenset())),
        (["add"], Command("add", None, {}, frozenset())),
        (["--vault", "/v", "add", "x", "--json"], Command("add", "x", {"--vault": "/v"}, frozenset({"--json"}))),
        (["--json", "add", "x", "--vault=/v"], Command("add", "x", {"--vault": "/v"}, frozenset({"--json"}))),
        (
            ["add", "--one", "--time", "2026-11-02", "--source=hook", "--src", "a.md#L3", "--meta", "k=v", "x"],
            Command(
                "add",
                "x",
                {"--time": "2026-11-02", "--source": "hook", "--src": "a.md#L3"},
                frozenset({"--one"}),
                ("k=v",),
            ),
        ),
        (["search", "oat milk", "--limit", "3"], Command("search", "oat milk", {"--limit": "3"}, frozenset())),
    ],
)
def test_a_plain_add_or_search_is_read_here(args: list[str], command: Command) -> None:
    assert read_command(args) == command


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["add", "--help"],
        ["-h", "add", "x"],
        ["add", "x", "--bogus"],
        ["add", "two", "texts"],
        ["add", "--", "-5 degrees"],
        ["add", "--source", "-x", "y"],
        ["add", "y", "--time"],
        ["--one", "add", "y"],
        ["search"],
        ["search", "x", "--as-of", "2026-01-01"],
        ["search", "x", "--one"],
        ["search", "x", "--meta", "k=v"],
    ],
)
def test_anything_else_goes_to_the_click_command(args: list[str]) -> None:
    assert read_command(args) is None


def test_the_process_prints_what_the_click_command_prints(memd: Memd, tmp_path: Path) -> None:
    clicked = memd("add", "Ran 5 km along the river\nthen 2 km home", "--source", "hook")
    done = memd_process(
        "--vault", str(memd.vault.root), "add", "Ran 5 km along the river\nthen 2 km home", "--source=hook"
    )
    assert done.returncode == 0, done.stderr
    lines = [re.sub(r"CURRENT\.md:\d+: <seq=\d+", "<seq", without_times(line)) for line in done.stdout.splitlines()]
    expected = [
        re.sub(r"CURRENT\.md:\d+: <seq=\d+", "<seq", without_times(line)) for line in clicked.output.splitlines()
    ]
    assert lines == expected and len(lines) == 2
    assert done.stdout.splitlines()[0].startswith("CURRENT.md:")

    as_json = memd_process("--vault", str(memd.vault.root), "--json", "add", "--one", "a\nb")
    [entry] = json.loads(as_json.stdout)
    assert entry["text"] == "a\nb" and entry["path"] == "CURRENT.md" and entry["seq"] == 5
    assert "source=user> a\n  b\n" in memd.vault.current.read_text()


def test_standard_input_and_errors_as_the_click_command_gives_them(vault: Vault) -> None:
    piped = memd_process("--vault", str(vault.root), "add", "--source", "hook", stdin="one\n\ntwo\n")
    assert piped.returncode == 0 and len(piped.stdout.splitlines()) == 2

    empty = memd_process("--vault", str(vault.root), "add", "   ")
    assert (empty.returncode, empty.stdout, empty.stderr) == (1, "", "memd: nothing to add: the text is empty\n")
    problem = json.loads(memd_process("--vault", str(vault.root), "add", "--json", "").stderr)
    assert problem == {"error": "nothing to add: the text is empty", "kind": "FormatError", "code": 1}

    missing = memd_process("--vault", str(vault.root / "nowhere"), "add", "x")
    assert missing.returncode == 1 and missing.stderr.startswith("memd: ") and "nowhere" in missing.stderr
    assert "Traceback" not in missing.stderr

    for meta, problem in (("seq=4", "seq is assigned by memd"), ("source=me", "use --source"), ("k=a b", "meta k=")):
        bad_meta = memd_process("--vault", str(vault.root), "add", "x", "--meta", meta)
        assert bad_meta.returncode == 1
        assert bad_meta.stderr.startswith(f"memd: invalid value for --meta: {problem}")  # click's message
    assert vault.current.read_text().count("source=") == 2  # the two piped lines, nothing since


def test_a_search_the_daemon_answers_prints_what_the_click_command_prints() -> None:
    # A short path: a Unix socket's path is limited to about a hundred bytes.
    with tempfile.TemporaryDirectory(prefix="m", dir="/tmp") as folder:
        vault = init_vault(Path(folder) / "v").vault
        Memory(vault).add(["Takes coffee with oat milk", "Flight to Kyoto on 3 April"])
        alone = [memd_process("--vault", str(vault.root), "search", "kyoto", *more) for more in ((), ("--json",))]
        server = Server(vault, Memory(vault))
        assert server.start()
        try:
            served = [memd_process("search", "kyoto", *more, cwd=vault.root) for more in ((), ("--json",))]
            nothing = memd_process("search", "zebra", cwd=vault.root)
            imported = memd_process("-c", _MODULES_AFTER, "search", "kyoto", cwd=vault.root)
            words = memd_process(
                "-c", _MODULES_AFTER, "search", "kyoto", cwd=vault.root, env={"MEMD_EMBEDDING": "none"}
            )
        finally:
            server.stop()
    assert server.served == 5
    assert "Flight to Kyoto" in words.stdout  # words alone, asked of the server as well
    assert [(done.returncode, done.stdout) for done in served] == [(0, done.stdout) for done in alone]
    assert "CURRENT.md:8" in served[0].stdout and json.loads(served[1].stdout)[0]["seq"] == "2"
    assert (nothing.stdout, nothing.stderr) == ("", "no matches\n")
    # The process only found the vault, asked and printed: no click, no index, no model, (no
    # setting in its environment) not the settings registry, and no value types (dataclasses).
    for done in (imported, words):
        modules = set(done.stdout.split())
        assert "memd.daemon.serve" in modules
        assert not modules & {"click", "memd.app", "memd.index", "tantivy", "numpy", "memd.core.settings"}
        assert not modules & {"memd.core.signature", "dataclasses"}


def test_a_search_no_daemon_answers_is_made_here_as_the_click_command_makes_it(memd: Memd) -> None:
    memd("add", "Takes coffee with oat milk")
    memd("add", "Flight to Kyoto on 3 April")
    root = str(memd.vault.root)
    asked = (["kyoto"], ["kyoto", "--json"], ["zebra"], ["kyoto", "--since", "someday"], ["coffee", "--limit", "1"])
    for args in asked:
        clicked = memd("search", *args, ok=False)
        done = memd_process("--vault", root, "search", *args)
        assert (done.returncode, done.stdout, done.stderr) == (clicked.exit_code, clicked.stdout, clicked.stderr), args
    failed = memd_process("--vault", root, "--json", "search", "kyoto", "--since", "someday")
    assert failed.returncode == 1 and json.loads(failed.stderr)["kind"] == "FormatError"


def test_a_search_made_here_and_stopped_with_ctrl_c_says_so_as_click_does(
    memd: Memd, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memd.cli.launch import main

    memd("add", "Flight to Kyoto on 3 April")

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Memory, "search", interrupted)
    monkeypatch.setattr(sys, "argv", ["memd", "--vault", str(memd.vault.root), "search", "kyoto"])
    with pytest.raises(SystemExit) as done:
        main()
    assert done.value.code == 1 and capsys.readouterr().err == "\nAborted!\n"


def test_a_plain_add_loads_only_what_appending_needs(vault: Vault) -> None:
    imported = memd_process("-c", _MODULES_AFTER, "--vault", str(vault.root), "add", "Takes coffee with oat milk")
    # Hooks run one add per message: appending one line loads no file parser (the document
    # model), no results of other verbs, no `memd config` code, and in a vault that was
    # never synced no device registry nor git.
    modules = set(imported.stdout.split())
    assert "memd.vault.buffer" in modules and "memd.core.entry" in modules
    assert not modules & {"memd.core.document", "memd.app.results", "memd.vault.buffer_status"}
    assert not modules & {"memd.core.config_edit", "memd.vault.spaces", "memd.git", "click"}
    assert "Takes coffee with oat milk" in vault.current.read_text()


# Runs `memd ARGS` as the script does, then prints the modules it imported.
_MODULES_AFTER = """
import sys
from memd.cli.launch import main
sys.argv = ["memd", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(" ".join(sys.modules))
"""


_GLOBAL = [["--vault", "/v"], ["--vault=/w"], ["--json"]]
_OWN = {
    "add": [
        ["--one"],
        ["--time", "2026-01-02"],
        ["--source", "hook"],
        ["--source=ai"],
        ["--src", "a.md#L1"],
        ["--meta", "k=v"],
        ["--meta=k2=v2"],
    ],
    "search": [
        ["--limit", "3"],
        ["--limit=7"],
        ["--since", "2026-01-01"],
        ["--until=2026-02-01"],
        ["--source", "user"],
    ],
}
_ARGUMENTS = {"add": [[], ["x"], ["y z"], ["-"], ["Ran 5 km"]], "search": [["q"], ["oat milk"]]}


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    """A command line as people and scripts type them: global options before the
    command or after it, the command's own options and its argument in any order,
    now and then a token the reader does not know."""
    name = draw(st.sampled_from(sorted(_OWN)))
    before = draw(st.lists(st.sampled_from(_GLOBAL), max_size=2))
    after = draw(st.lists(st.sampled_from(_GLOBAL + _OWN[name]), max_size=4))
    after.append(draw(st.sampled_from(_ARGUMENTS[name])))
    after = draw(st.permutations(after))
    noise = draw(st.lists(st.sampled_from(["--bogus", "-h", "--", "-5", "extra", "--as-of", "--limit"]), max_size=1))
    tokens = [token for unit in [*before, [name], *after] for token in unit]
    at = draw(st.integers(0, len(tokens)))
    return [*tokens[:at], *noise, *tokens[at:]]


@settings(max_examples=400, deadline=None)
@given(command_lines())
def test_what_is_read_here_is_what_click_reads(args: list[str]) -> None:
    """Whatever command line the reader takes, click takes too, with the same values."""
    command = read_command(args)
    if command is None:
        return  # handed to click as it is
    from memd.cli.root import main as group

    with group.make_context("memd", list(args)) as ctx:
        name, sub, rest = group.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        assert name == command.name and sub is not None
        with sub.make_context(name, rest, parent=ctx) as own:
            root = ctx.obj or {}
            assert root.get("vault", ctx.params["vault"]) == command.vault
            assert bool(ctx.params["as_json"] or own.params["as_json"] or root.get("json")) == command.json_out
            if name == "add":
                assert own.params["text"] == command.argument
                assert own.params["one"] == ("--one" in command.flags)
                assert own.params["when"] == command.values.get("--time")
                assert own.params["source"] == command.values.get("--source", "user")
                assert own.params["src"] == command.values.get("--src")
                assert own.params["meta"] == command.meta
            else:
                assert own.params["query"] == command.argument
                assert own.params["limit"] == int(command.values.get("--limit", "10"))
                for key in ("since", "until", "source"):
                    assert own.params[key] == command.values.get(f"--{key}")


def test_a_search_the_daemon_does_not_answer_asks_it_once_and_searches_here() -> None:
    import socket
    import threading

    from memd.daemon.serve import socket_path

    # A short path: a Unix socket's path is limited to about a hundred bytes.
    with tempfile.TemporaryDirectory(prefix="m", dir="/tmp") as folder:
        vault = init_vault(Path(folder) / "v").vault
        Memory(vault).add(["Flight to Kyoto on 3 April"])
        asked: list[bytes] = []
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(socket_path(vault.root)))
        listener.listen(4)
        listener.settimeout(0.1)
        stop = threading.Event()

        def refuse() -> None:  # a daemon that cannot answer (a bad filter, a bug)
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                with conn:
                    asked.append(conn.recv(1 << 16))
                    conn.sendall(b'{"error": "cannot answer"}\n')

        thread = threading.Thread(target=refuse, daemon=True)
        thread.start()
        try:
            done = memd_process("search", "kyoto", cwd=vault.root)
        finally:
            stop.set()
            thread.join(timeout=30)
            listener.close()
    assert done.returncode == 0 and "Flight to Kyoto" in done.stdout
    assert len(asked) == 1 and b'"verb":"search"' in asked[0]
