"""The fuzz and fault suite: hundreds of malformed inputs, each fed to memd
the way a person or an attacker would, each checked for the same promises.

For every input: every command exits 0 or 1; an error is one line naming the
file; no traceback; each command finishes within 10 s; every good entry of
the vault is still there; and nothing outside the vault was written, nor read
into memd's output, files, index or git history (a canary file sits beside
the vault, and links point at it).

Inputs: YAML frontmatter, signatures, JSON and JSONL transcripts, huge and
deep Markdown, binary bytes, odd file names and links, and memd's own files
damaged (state, lock, index, config).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memd.app.init import init_vault

from .hostile import REPO

pytestmark = pytest.mark.slow

# Work, not wall time: a command on a malformed input uses well under 2 CPU seconds; one that
# loops or backtracks without end burns far more. The process's wall-clock limit only catches a
# hang (waiting on nothing), at 100 s a command: over 10x what a loaded machine needs.
CPU_SECONDS = 20.0
HANG_SECONDS = 100.0
CANARY = "CANARY-7f3a9c-do-not-read"
GOOD = ["walrus tusk ledger alpha", "quince jam ledger beta", "heron pond ledger gamma", "kiln glaze ledger delta"]
VAULT_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("lint",),
    ("list",),
    ("search", "ledger"),
    ("add", "a fresh ledger fact"),
    ("consolidate",),
    ("verify",),
)


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, bytes] = field(default_factory=dict)  # vault-relative path -> content
    inputs: dict[str, bytes] = field(default_factory=dict)  # files outside the vault, given to `memd ingest`
    links: dict[str, str] = field(default_factory=dict)  # vault-relative link -> target ("@" = the outside folder)
    special: tuple[str, ...] = ()  # "fifo:REL", "dir:REL", "keep-good" (the case itself replaces CURRENT.md)
    only: tuple[tuple[str, ...], ...] = ()  # these commands instead of the usual ones
    cpu_seconds: float = CPU_SECONDS  # the most CPU one command may use

    def commands(self, inputs: Path) -> list[list[str]]:
        if self.only:
            return [list(c) for c in self.only]
        if self.inputs:
            return [["ingest", str(inputs / name)] for name in self.inputs] + [["lint"], ["verify"]]
        return [list(c) for c in VAULT_COMMANDS]

    def names(self) -> list[str]:
        """What an error line may name: the file at fault (or the folder holding it)."""
        return [*self.files, *self.inputs, *self.links, *(s.split(":", 1)[1] for s in self.special if ":" in s)]


def _topic(body: str, frontmatter: str | None = 'id: bad\nsummary: "bad"\n') -> bytes:
    head = f"---\n{frontmatter}---\n" if frontmatter is not None else ""
    return (head + "# Bad\n\n" + body).encode("utf-8", "surrogatepass")


def yaml_cases() -> Iterator[Case]:
    laughs = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True)
    )
    texts = [
        laughs,
        laughs + "summary: *h\n",
        laughs + "update_log: *h\n",
        "a: &a [*a]\n",
        "a: &a {b: *a}\n",
        "x: " + "[" * 3000 + "]" * 3000 + "\n",
        "x: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n",
        "x:\n" + "".join(" " * i + "- \n" for i in range(1, 800)),
        "x:\n" + "".join(" " * i + "a:\n" for i in range(1, 800)),
        "created: 2026-99-99\n",
        "created: 2026-02-30\n",
        "updated: 2026-01-01T25:61:00Z\n",
        "created: 0000-00-00\n",
        "date: 9999-12-31T23:59:59-23:59\n",
        "[a]: 1\n",
        "? [a, b]\n: 1\n",
        "{a: 1}: 2\n",
        "? {a: 1}\n: 2\n",
        "!!set {? [a]}\n",
        "n: " + "9" * 5000 + "\n",
        "n: -" + "9" * 5000 + "\n",
        "n: 0x" + "f" * 5000 + "\n",
        "n: 1e99999\n",
        "f: .nan\nsummary: .inf\n",
        "a: !!python/object/apply:os.system ['echo hi']\n",
        "a: !!binary AAAA\nsummary: !!binary ====\n",
        "a: !custom x\n",
        "id: 1\nid: 2\n",
        "- just\n- a list\n",
        "just a scalar\n",
        "a: 'unclosed\n",
        'a: "unclosed\n',
        "a:\tb\n\tc: d\n",
        "a: b: c\n",
        ": no key\n",
        "%YAML 9.9\n---\na: 1\n",
        "a: 1\n...\nb: 2\n",
        "summary: [1, 2, 3]\nupdate_log: 5\nid: [x]\n",
        "summary: {a: b}\nupdate_log: {x: y}\n",
        "tokens: -5\nupdated: [1]\n",
        "id: " + "x" * 200_000 + "\n",
        "a: \x07\x08\x0b\n",
        "a: \ud800\n",
        "a: b\r\nc: d\r\n",
        "\ufeffa: 1\n",
        "<<: {a: 1}\n",
        "<<: [*x]\n",
        "a: |\n" + "  line\n" * 20_000,
    ]
    for number, text in enumerate(texts):
        yield Case(f"yaml-{number}", {"topics/bad.md": _topic("- <seq=50> a fact under bad yaml\n", text)})
    yield Case("yaml-unclosed", {"topics/bad.md": b"---\nid: bad\n# Bad\n- <seq=50> x\n"})
    yield Case("yaml-only-dashes", {"topics/bad.md": b"---\n---\n---\n"})
    yield Case("yaml-in-current", {"CURRENT.md": b"---\na: &a [*a]\n---\n# CURRENT\n"}, special=("keep-good",))
    yield Case("yaml-note", {"people/sam.md": _topic("Sam likes jam.\n", laughs + "tags: *h\n")})


def signature_cases() -> Iterator[Case]:
    sigs = [
        "<seq=1-999999999999>",
        "<seq=1-100000000>",
        "<seq=3+1-99999999999999>",
        "<seq=" + "1" * 30 + ">",
        "<seq=0>",
        "<seq=-5>",
        "<seq=007>",
        "<seq=>",
        "<seq=5-3>",
        "<seq=5-5>",
        "<seq=1+1>",
        "<seq=1-10+5>",
        "<seq=" + "+".join(str(i) for i in range(100, 20_000, 2)) + ">",
        "<seq=" + "+".join(f"{i * 10}-{i * 10 + 5}" for i in range(10, 5000)) + ">",
        "<seq=60",
        "<seq=60,time=2026-01-01",
        "<seq=60,,>",
        "<seq=60,=x>",
        "<seq=60,x>",
        "<seq=60,time=0001-01-01T00:00:00+23:59>",
        "<seq=60,time=9999-12-31T23:59:59-23:59>",
        "<seq=60,time=2026-13-45>",
        "<seq=60,time=" + "9" * 1000 + ">",
        "<seq=60,time=2026-01-01T00:00:00+99:99>",
        "<seq=60,time=nan>",
        "<seq=60,time=>",
        "<seq=60,source=user,source=ai>",
        "<seq=60,seq=61>",
        "<seq=60,1bad=x>",
        "<seq=60,ke y=x>",
        "<seq=60," + ",".join(f"k{i}=v" for i in range(5000)) + ">",
        "<seq=60,src=%ZZ%2>",
        "<seq=60,src=" + "%25" * 10_000 + ">",
        "<seq=60,x=" + "a" * 300_000 + ">",
        "<time=1,seq=60>",
        "<SEQ=60>",
        "<seq=60><seq=61>",
        "<seq=1>",
        "<seq=4>",
        "<seq=1-5>",
        "<seq=60,src=https://bob:hunter22@host/x>",
        "<seq=60,api_key=sk-proj-" + "Zq81x7KpLm2Vw9RtYb4Nc6Hd" + ">",
        "<seq=999999999999999>",
        "<seq=1000000000000000>",
        "<seq=60\x00>",
        "<seq=60\u202e>",
    ]
    for number, sig in enumerate(sigs):
        yield Case(f"sig-{number}", {"topics/bad.md": _topic(f"- {sig} a fact with an odd signature\n")})
    many = "".join(f"- <seq={i * 200 + 100}-{i * 200 + 199}> r\n" for i in range(1_000))
    yield Case("sig-many-ranges", {"topics/bad.md": _topic(many)})
    dup = "".join(f"- <seq=1-100000> dup {i}\n" for i in range(60))
    yield Case("sig-budget", {"topics/bad.md": _topic(dup)})
    yield Case("sig-in-current", {"CURRENT.md": b"# CURRENT\n- <seq=1-999999999999> typo\n"}, special=("keep-good",))


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def _chatgpt(mapping: object, **extra: object) -> bytes:
    return _json([{"title": "t", "current_node": "b", "mapping": mapping, **extra}])


def json_cases() -> Iterator[Case]:
    msg = {"role": "user", "content": "The boiler is serviced in March."}
    good_node = {"message": {"author": {"role": "user"}, "content": {"parts": ["hi there"]}}, "parent": None}
    values: list[bytes] = [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'[{"role": "user", "content": ' + b"[" * 5000 + b'"x"' + b"]" * 5000 + b"}]",
        b'[{"role": "user", "content": "x", "time": ' + b"9" * 5000 + b"}]",
        b'[{"role": "user", "content": "x", "time": -' + b"9" * 5000 + b"}]",
        b'[{"role": "user", "content": "x", "time": 1e999}]',
        b'[{"role": "user", "content": "x", "time": NaN}]',
        b'[{"role": "user", "content": "x", "time": Infinity}]',
        b'[{"role": "user", "content": "x", "time": 99999999999999999999}]',
        b'[{"role": "user", "content": "x", "time": "0001-01-01T00:00:00+23:59"}]',
        b'[{"role": "user", "content": "\\ud800 lone surrogate"}]',
        b'[{"role": "user", "content": "nul \\u0000 inside"}]',
        b"",
        b"   ",
        b"null",
        b"42",
        b'"a string"',
        b"[]",
        b"{}",
        b"[1, 2, 3]",
        b"[[], {}]",
        b'{"messages": "not a list"}',
        b'{"messages": [1, 2]}',
        _json([{"role": ["a"], "content": {"parts": [{"parts": [{"parts": ["deep"]}]}]}}]),
        _json([{"role": {"name": ["x"]}, "content": "x"}]),
        _json([{"role": "user", "content": None}, {"role": "user"}]),
        _json([{"role": "user", "content": "x" * 5_000_000}]),
        _json([msg] * 30_000),
        _chatgpt({"a": {"parent": "b", "children": []}, "b": {"parent": "a", "children": ["a"]}}),
        _chatgpt({"b": {"message": "not a dict", "parent": None}}),
        _chatgpt({"b": {"message": {"author": "x", "content": "y"}, "parent": None}}),
        _chatgpt({"b": good_node}, current_node=["x"]),
        _chatgpt("not a mapping"),
        _chatgpt({"b": {**good_node, "message": {**good_node["message"], "create_time": "9" * 5000}}}),
        _json([{"mapping": {}, "title": None}]),
        _json(
            [
                {
                    "title": "ghp_" + "Zq81x7KpLm2Vw9RtYb4Nc6HdZq81x7KpLm2V",
                    "current_node": "b",
                    "mapping": {"b": good_node},
                }
            ]
        ),
        _json([{"chat_messages": "x"}]),
        _json([{"chat_messages": [{"sender": "human", "text": None, "content": [[["x"]]]}]}]),
        _json([{"chat_messages": [{"sender": ["human"], "text": "x"}], "uuid": ["u"]}]),
        _json({"chat_messages": [{"sender": "human", "text": "hello", "created_at": 1e300}]}),
        _json([{"conversation": {}, "qa": []}]),
        _json([{"conversation": {"session_1": "x"}, "sample_id": 1}]),
        b"\xef\xbb\xbf" + _json([msg]),
        b"\xff\xfe" + "[]".encode("utf-16-le"),
        b'[{"role": "user", "content": "x"}',
        b"[" + b"1," * 500_000 + b"1]",
    ]
    for number, value in enumerate(values):
        yield Case(f"json-{number}", inputs={f"chat-{number}.json": value})


def jsonl_cases() -> Iterator[Case]:
    line = json.dumps({"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "Plant tomatoes."}})
    reply = json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text"}]}})
    chat = json.dumps({"role": "user", "content": "The boiler is serviced in March."})
    lines: list[str] = [
        line + "\n" + '{"type": "assistant", "message": {"role": "ass',
        line + "\n{oops}\n" + line + "\n",
        line + "\n" + "[" * 100_000 + "]" * 100_000 + "\n",
        "[" * 100_000 + "]" * 100_000 + "\n" + line + "\n",
        line + "\n" + '{"n": ' + "9" * 5000 + "}\n",
        "1\n2\n3\n",
        '"a"\n"b"\n',
        "\n\n\n",
        reply + "\n" + reply + "\n",
        line.replace('"Plant tomatoes."', '"This session is being continued from a previous conversation"') + "\n",
        line.replace('"content": "Plant tomatoes."', '"content": [[[[["x"]]]]]') + "\n",
        line.replace('"sessionId": "s1"', '"sessionId": ["x"]') + "\n",
        line.replace('"message": {', '"timestamp": 1e999, "message": {') + "\n",
        (line + "\r\n") * 3,
        "\ufeff" + chat + "\n",
        chat + "\n" + chat.replace("user", "assistant") + "\n" + "{" * 10,
        (chat + "\n") * 20_000,
        "{}\n" * 1000,
        "null\n",
        json.dumps({"type": "summary", "summary": "x" * 100_000}) + "\n" + line + "\n",
        json.dumps({"type": "summary", "summary": ["not", "text"]}) + "\n" + line + "\n",
        json.dumps({"type": "user", "isCompactSummary": True, "message": {"content": "summary"}}) + "\n",
        line + "\n" + "\x00\x01binary\n",
        line + "\n" + "\udcff\n",
    ]
    for number, text in enumerate(lines):
        data = text.encode("utf-8", "surrogateescape")
        yield Case(f"jsonl-{number}", inputs={f"session-{number}.jsonl": data})


def huge_cases() -> Iterator[Case]:
    big = "".join(f"- <seq={i + 100},time=2026-01-01T00:00:00Z,source=user> fact {i}\n" for i in range(3_000))
    yield Case("huge-topic", {"topics/bad.md": _topic(big)})
    # 200,000 entries: every command that reads topics. The first search over
    # them builds the index (Whoosh and sentence vectors: about 1.6 ms an entry
    # here), the index's own cost, measured by bench/bench_hostile.py.
    huge = "".join(f"- <seq={i + 100},time=2026-01-01T00:00:00Z,source=user> fact {i}\n" for i in range(200_000))
    yield Case(
        "huge-topic-200k",
        {"topics/bad.md": _topic(huge)},
        only=(("lint",), ("list",), ("verify",), ("status",), ("add", "a fresh ledger fact"), ("show", "bad")),
        # The first command to read them (status) builds the topic catalog over all 200,000:
        # 19.8 s CPU on an idle machine, at the bound for one input; a loop burns far more.
        cpu_seconds=2 * CPU_SECONDS,
    )
    yield Case("huge-note", {"notes/big.md": ("line of a big note\n" * 100_000).encode()})
    yield Case("huge-heading-spaces", {"topics/bad.md": _topic("# a" + " " * 300_000 + "x\n")})
    yield Case("huge-one-line", {"topics/bad.md": _topic("- " + "word " * 400_000 + "\n")})
    nested = "".join(" " * i + "- level\n" for i in range(6000))
    yield Case(
        "deep-list",
        {"topics/bad.md": _topic(nested)},
        # `consolidate` adopts all 6,000 items: 5-6 s CPU alone, 20.1 s once in a full CI run on
        # two busy cores (its embedding threads count), at the bound for one input; a loop burns far more.
        cpu_seconds=2 * CPU_SECONDS,
    )
    yield Case("deep-markers", {"topics/bad.md": _topic("- " * 20_000 + "x\n")})
    yield Case("deep-quote", {"topics/bad.md": _topic(">" * 50_000 + " x\n")})
    yield Case(
        "many-headings", {"topics/bad.md": _topic("".join(f"{'#' * (i % 6 + 1)} h{i}\n" for i in range(30_000)))}
    )
    yield Case("fences", {"topics/bad.md": _topic("```\n" * 20_001)})
    yield Case("crlf-mix", {"topics/bad.md": _topic("- <seq=60> a\r\n- <seq=61> b\n\r- c\r")})
    note = "".join(f"- item {i}\n" for i in range(20_000)).encode()
    yield Case("huge-ingest-note", inputs={"items.md": note})
    yield Case("huge-ingest-para", inputs={"para.txt": ("word " * 400_000).encode()})


def binary_cases() -> Iterator[Case]:
    rng = random.Random(7)
    blobs = [bytes(rng.randrange(256) for _ in range(size)) for size in (10, 1000, 100_000)]
    for number, blob in enumerate(blobs):
        yield Case(f"binary-topic-{number}", {"topics/bad.md": blob})
        yield Case(f"binary-note-{number}", {"bad.md": blob})
        yield Case(f"binary-ingest-{number}", inputs={f"blob-{number}.md": blob})
    yield Case("nul-in-topic", {"topics/bad.md": b"# Bad\n- <seq=60> nul \x00 here\n"})
    yield Case("latin1-topic", {"topics/bad.md": "# Caf\u00e9\n- <seq=60> caf\u00e9\n".encode("latin-1")})
    yield Case("utf16-topic", {"topics/bad.md": "\ufeff# Bad\n- <seq=60> x\n".encode("utf-16")})
    yield Case("binary-current", {"CURRENT.md": b"\x00\xff" * 100}, special=("keep-good",))
    yield Case("latin1-ingest", inputs={"latin1.txt": "caf\u00e9".encode("latin-1")})
    yield Case("binary-config", {".memd/config.toml": b"\x00\xff\xfe"})


def name_cases() -> Iterator[Case]:
    body = _topic("- <seq=70> a fact in an oddly named file\n")
    names = [
        "topics/aux.md",
        "topics/con.md",
        "topics/nul.md",
        "topics/COM1.md",
        "topics/with space.md",
        "topics/東京.md",
        "topics/-dash.md",
        "topics/#hash.md",
        "topics/100%.md",
        "topics/a\nb.md",
        "topics/" + "x" * 250 + ".md",
        "topics/..md",
        "topics/deep/er/still/x.md",
        "Untitled.md",
        "people/sam.md",
        "topics/Ünïcödé.md",
        "topics/a:b.md",
        "topics/tab\t.md",
        "topics/q?.md",
        "topics/e\u0301.md",
    ]
    for number, name in enumerate(names):
        yield Case(f"name-{number}", {name: body})
    yield Case("link-file-out", links={"topics/pw.md": "@/secret.md"})
    yield Case("link-dir-out", links={"people": "@"})
    yield Case("link-topics-dir-out", links={"topics/more": "@"})
    yield Case("link-etc", links={"topics/passwd.md": "/etc/passwd"})
    yield Case("link-dev-zero", links={"topics/zero.md": "/dev/zero"})
    yield Case("link-broken", links={"topics/gone.md": "/nonexistent/x.md"})
    yield Case("link-loop", links={"topics/loop.md": "loop.md"})
    yield Case("link-current-out", links={"notes/CURRENT-copy.md": "@/secret.md"})
    yield Case("link-inbox-out", links={"inbox/drop.md": "@/secret.md"})
    yield Case("fifo-topic", special=("fifo:topics/pipe.md",))
    yield Case("fifo-current", special=("fifo:CURRENT.md", "keep-good"))
    yield Case("dir-named-md", special=("dir:topics/folder.md",))
    yield Case("dir-current", special=("dir:CURRENT.md", "keep-good"))


def own_file_cases() -> Iterator[Case]:
    states = [
        b'{"next_seq": 3, "buffer_since": 7}',
        b'{"next_seq": 1000000000000000000000000000000}',
        b'{"next_seq": "x"}',
        b'{"next_seq": 3, "epoch": -1, "last_consolidation": [1]}',
        b'{"next_seq": ' + b"9" * 5000 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b"\xff\xfe",
        b"",
        b'{"next_seq": 3, "spaces": {"1": 10000000000000000000000}}',
        b'{"next_seq": true}',
    ]
    for number, state in enumerate(states):
        yield Case(f"state-{number}", {".memd/state.json": state})
    yield Case("state-dir", special=("dir:.memd/state.json",))
    yield Case("lock-dir", special=("dir:.memd/lock",))
    yield Case("index-file", {".memd/index": b"not a folder"})
    yield Case(
        "index-garbage", {".memd/index/manifest.json": b"{" * 1000, ".memd/index/tantivy/meta.json": b"\x00" * 64}
    )
    yield Case(
        "whoosh-garbage",
        {".memd/config.toml": b'[index]\nbackend = "whoosh"\n', ".memd/index/whoosh/MAIN_x.toc": b"\x00" * 64},
    )
    yield Case("journal-garbage", {".memd/journal/pending.json": b'{"message": 1, "changes": "x"}'})
    yield Case(
        "journal-outside",
        {
            ".memd/journal/pending.json": _json(
                {"message": "m", "changes": [{"path": "../outside/secret.md", "before": None, "after": "pwned"}]}
            )
        },
    )
    yield Case("acks-garbage", {".memd/acks.jsonl": b"{oops}\n" + b"[" * 50_000 + b"\n"})
    yield Case("seq-cache-garbage", {".memd/seq.local": b'{"mark": "x", "files": 5}'})
    yield Case("config-bad-toml", {".memd/config.toml": b"[consolidate\nbuffer_tokens = "})
    yield Case(
        "config-bad-values", {".memd/config.toml": b'[consolidate]\nbuffer_tokens = -5\nbuffer_age = "99999999999d"\n'}
    )
    yield Case("config-ignore-wrong", {".memd/config.toml": b"[vault]\nignore = 5\n"})


def all_cases() -> list[Case]:
    return [
        *yaml_cases(),
        *signature_cases(),
        *json_cases(),
        *jsonl_cases(),
        *huge_cases(),
        *binary_cases(),
        *name_cases(),
        *own_file_cases(),
    ]


CASES = all_cases()


def test_the_suite_has_at_least_200_inputs() -> None:
    assert len(CASES) >= 200
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault with good entries in CURRENT.md and a topic, all committed."""
    root = tmp_path_factory.mktemp("template") / "vault"
    vault = init_vault(root).vault
    entries = "".join(
        f"- <seq={n},time=2026-01-0{n}T00:00:00Z,source=user> {text}\n" for n, text in enumerate(GOOD[:2], 1)
    )
    vault.current.write_text(vault.current.read_text() + entries)
    topic = "".join(
        f"- <seq={n},time=2026-01-0{n}T00:00:00Z,source=user> {text}\n" for n, text in enumerate(GOOD[2:], 3)
    )
    (vault.topics_dir / "good.md").write_text(f'---\nid: good\nsummary: "good"\n---\n# Good\n{topic}')
    vault.state_path.write_text('{"epoch": 0, "next_seq": 5}\n')
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "good entries"], check=True, capture_output=True)
    return root


def _prepare(case: Case, template: Path, place: Path) -> tuple[Path, Path, Path]:
    vault = place / "vault"
    shutil.copytree(template, vault, symlinks=True)
    outside = place / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Outside\n- <seq=900> {CANARY} lives outside the vault\n")
    (outside / "data.json").write_text(json.dumps([{"role": "user", "content": CANARY}]))
    inputs = place / "inputs"
    inputs.mkdir()
    for rel, data in case.files.items():
        path = vault / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for name, data in case.inputs.items():
        (inputs / name).write_bytes(data)
    for rel, target in case.links.items():
        path = vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(str(outside) + target[1:] if target.startswith("@") else target)
    for special in case.special:
        what, _, rel = special.partition(":")
        if not rel:
            continue
        path = vault / rel
        if path.exists():
            path.unlink() if path.is_file() else shutil.rmtree(path)
        if what == "fifo":
            os.mkfifo(path)
        elif what == "dir":
            path.mkdir(parents=True)
    return vault, outside, inputs


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _vault_bytes(vault: Path) -> bytes:
    """Everything memd could have written: files (not FIFOs or links), and every git object."""
    chunks = []
    for path in vault.rglob("*"):
        if path.is_file() and not path.is_symlink() and ".git" not in path.relative_to(vault).parts:
            chunks.append(path.read_bytes())
    objects = subprocess.run(
        ["git", "-C", str(vault), "cat-file", "--batch-all-objects", "--batch"], capture_output=True
    )
    return b"".join(chunks) + objects.stdout


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_malformed_input_gets_an_answer_never_a_crash(case: Case, template: Path, tmp_path: Path) -> None:
    vault, outside, inputs = _prepare(case, template, tmp_path)
    before_outside = _snapshot(outside)
    commands = case.commands(inputs)
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMD_LOCK_TIMEOUT": "2s"}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz_driver", str(vault), json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS * len(commands),
        cwd=REPO,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    for result in results:
        shown = f"{case.name}: memd {' '.join(result['args'])[:80]}"
        assert result["traceback"] is None, f"{shown}\n{result['traceback']}"
        assert result["code"] in (0, 1), f"{shown}: exit {result['code']}\n{result['stderr']}"
        assert result["cpu_seconds"] < case.cpu_seconds, f"{shown}: used {result['cpu_seconds']} CPU s"
        errors = [line for line in result["stderr"].splitlines() if line.startswith("memd: ")]
        assert len(errors) <= 1, f"{shown}: {result['stderr']}"
        if errors:
            assert _names_a_file(errors[0], case, vault), f"{shown}: the error names no file: {errors[0]}"
        assert CANARY not in result["stdout"] + result["stderr"], f"{shown} printed a file from outside the vault"
    # No good entry lost; nothing outside written, nor read into the vault, its index or its history.
    everything = _vault_bytes(vault)
    for text in GOOD:
        assert text.encode() in everything, f"{case.name}: lost {text!r}"
    assert _snapshot(outside) == before_outside, f"{case.name}: wrote outside the vault"
    assert CANARY.encode() not in everything, f"{case.name}: read a file outside the vault"
    if "keep-good" not in case.special:
        live = b"".join(
            p.read_bytes() for p in vault.rglob("*.md") if p.is_file() and not p.is_symlink() and ".git" not in p.parts
        )
        for text in GOOD:
            assert text.encode() in live, f"{case.name}: {text!r} is no longer in any file"


def _names_a_file(error: str, case: Case, vault: Path) -> bool:
    """An error line names the file at fault, a file memd keeps, or the vault."""
    names = [*case.names(), *(Path(n).name for n in case.names())]
    names += ["CURRENT.md", ".memd/", "state.json", "config.toml", "lock", str(vault)]
    return any(name and name in error for name in names)
