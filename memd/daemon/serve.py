"""Warm reads: the running daemon answers ``memd search`` and ``memd ask`` over a Unix socket.

A search in a process of its own pays for its start: imports, opening the
index, loading the embedding model and the vectors, most of its CPU time.
The daemon has all of that open already, so while it runs it listens on
``.memd/serve.sock`` and ``memd search`` (or ``memd ask``) sends its query
there and prints the answer; with no daemon, a stale socket, or no answer
within ``TIMEOUT``, it runs in its own process as before, so an answer never
depends on the daemon; so does a command with a setting in its environment
(``MEMD_INDEX_BACKEND=whoosh memd search …``), and a question for a model, which is
asked with the asking process's settings and keys. One setting travels with the
request instead: ``MEMD_EMBEDDING=none`` asks for words alone, which the daemon's
index answers as a process with no model would (``"words": true``).

The socket is the vault owner's alone (mode 0600 inside ``.memd/``). One
request per connection, one JSON line each way: ``{"verb": "search",
"args": {...}}`` and the results ``memd search --json`` prints (``"ask"``:
the answer ``memd ask --json`` prints), or ``{"error": "..."}``. A client that sends nothing, or too much, is cut off
(``READ_SECONDS``, ``MAX_REQUEST``), so no client can stall the others.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.core.errors import MemdError

if TYPE_CHECKING:
    import socket

    from memd.app import Memory
    from memd.vault.vault import Vault

SOCKET_NAME = "serve.sock"
MAX_REQUEST = 64 * 1024  # bytes of one request: a query, its filters
READ_SECONDS = 2.0  # a connected client has this long to send its request
TIMEOUT = 30.0  # a client waits this long for an answer, then searches itself
# Settings that change no answer: given in a command's environment, the daemon may still answer it.
UNRELATED = frozenset({"MEMD_LOCK_TIMEOUT", "MEMD_WARM_SECONDS"})
# Every setting's variable starts with one of these (tests/test_serve.py holds the registry
# to it): an environment with none of them sets nothing, and a served search's process need
# not import the registry (and dataclasses) to learn so.
SETTING_PREFIXES = ("MEMD_", "OPENAI_")
# Unix socket paths are limited (108 bytes on Linux, 104 on macOS): a vault
# deeper than this is searched in each process, as without a daemon.
MAX_PATH = 100
ARGS = {"search": ("query", "limit", "since", "until", "source"), "ask": ("question", "budget")}
# The one setting a request carries: the words alone (the daemon's index holds them whatever its
# model). Spelt here, not imported: a served search's process imports no index code
# (tests/test_serve.py holds them to memd.core.settings and memd.index.embedding).
EMBEDDING_ENV = "MEMD_EMBEDDING"
NO_MODEL = "none"


def socket_path(root: Path) -> Path:
    """The socket of the vault at ``root`` (what a client needs: no ``Vault`` opened)."""
    return root / ".memd" / SOCKET_NAME


def usable(path: Path) -> bool:
    import socket  # here: a search with no daemon to ask never loads it

    return hasattr(socket, "AF_UNIX") and len(os.fsencode(str(path))) <= MAX_PATH


class Server:
    """Answers searches from the daemon's ``Memory`` on a thread of its own."""

    def __init__(
        self, vault: Vault, memory: Memory, log: Callable[[str], None] = lambda _: None, embed_seconds: float = 0.0
    ) -> None:
        self.path = socket_path(vault.root)
        self.memory = memory
        self.log = log
        # The daemon embeds what is missing in its own loop (0: a reader never waits for it);
        # a warm server (warm.py) watches nothing, so a search embeds a slice as in its own process.
        self.embed_seconds = embed_seconds
        self.served = 0
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self) -> bool:
        """Listen (False when the socket cannot be made here: searches then run in their own processes)."""
        if not usable(self.path):
            self.log(f"searches are not served: {self.path} is too long for a socket")
            return False
        with suppress(OSError):  # (a folder in its way stays, and the bind below says so)
            self.path.unlink()  # left by a daemon that was killed; the daemon lock says none runs
        import socket

        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            old = os.umask(0o177)  # the socket is born 0600: no moment where others may connect
            try:
                listener.bind(str(self.path))
            finally:
                os.umask(old)
            listener.listen(16)
            listener.settimeout(0.5)  # wakes to see a stop
        except OSError as err:
            listener.close()
            self.log(f"searches are not served: {self.path}: {err.strerror or err}")
            return False
        self._socket = listener
        self._thread = threading.Thread(target=self._serve, name="memd-serve", daemon=True)
        self._thread.start()
        return True

    def stop(self, unlink: bool = True) -> None:
        """Stop listening; ``unlink=False`` leaves the socket's path to whoever bound it since."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=TIMEOUT)
        if self._socket is not None:
            self._socket.close()
            if unlink:
                with suppress(OSError):
                    self.path.unlink()

    def _serve(self) -> None:
        assert self._socket is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed under us
            with conn:
                try:
                    self._handle(conn)
                except OSError:
                    continue  # the client went away: its own process searches
                except Exception as err:  # a bug answering one request must not stop the serving
                    self.log(f"a search was not answered: {type(err).__name__}: {err}")
                    with suppress(OSError):
                        conn.sendall(_line({"error": "the daemon could not answer; searching here"}))

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(READ_SECONDS)
        data = _read_line(conn, MAX_REQUEST)
        if data is None:
            conn.sendall(_line({"error": f"request over {MAX_REQUEST} bytes"}))
            return
        conn.settimeout(TIMEOUT)
        reply = answer(self.memory, data, self.embed_seconds)
        self.served += 1
        conn.sendall(_line(reply))


def answer(memory: Memory, data: bytes, embed_seconds: float = 0.0) -> dict[str, Any]:
    """The reply to one request: the results or the answer, or why there are none."""
    try:
        request = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {"error": "the request is not a JSON line"}
    verb = request.get("verb") if isinstance(request, dict) else None
    if verb not in ARGS or not isinstance(request.get("args"), dict):
        return {"error": 'expected {"verb": "search" or "ask", "args": {...}}'}
    args = {key: value for key, value in request["args"].items() if key in ARGS[verb]}
    words_only = request["args"].get("words") is True
    text, number = (
        (args.get("query"), args.get("limit", 10))
        if verb == "search"
        else (args.get("question"), args.get("budget", 1500))
    )
    if not isinstance(text, str) or not isinstance(number, int):
        return {"error": f"{verb} needs its text and a number"}
    try:
        if verb == "ask":
            engine = memory.engine
            if engine.client is not None:
                # The model is called with the asking process's settings and keys, not the daemon's.
                return {"error": "a question for the model is answered in the asking process"}
            said = memory.ask(**args, embed_seconds=embed_seconds, engine=engine, words_only=words_only)
            return {"answer": said.to_json(), "warnings": list(said.warnings), "fallback": said.fallback}
        found = memory.search(**args, embed_seconds=embed_seconds, words_only=words_only)
    except MemdError as err:
        return {"error": str(err)}
    return {
        "results": list(found.results),
        "note": found.note,
        "finish_seconds": found.finish_seconds,
        "respelled": [list(pair) for pair in found.respelled],
    }


def request(root: Path, verb: str, args: dict[str, Any], timeout: float = TIMEOUT) -> dict[str, Any] | None:
    """The reply of the daemon running for the vault at ``root`` to a search or a
    question, or None (no daemon, no answer, or an error the caller's own search
    will meet and report itself)."""
    path = socket_path(root)
    given = asked_here()
    try:
        there = path.exists()
    except OSError:  # a folder on the way that cannot be searched: no daemon to ask
        return None
    if not there or not usable(path) or given is None:
        return None
    import socket

    args = {**args, **given}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(str(path))
            conn.sendall(_line({"verb": verb, "args": args}))
            data = _read_line(conn)
        reply = json.loads((data or b"").decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(reply, dict) or "error" in reply:
        return None
    return reply if isinstance(reply.get("results" if verb == "search" else "answer"), (list, dict)) else None


def asked_here() -> dict[str, Any] | None:
    """What this process's environment asks of a served search: ``{}`` nothing,
    ``{"words": True}`` words alone (``MEMD_EMBEDDING=none``), or None for another
    setting (``MEMD_INDEX_BACKEND=whoosh``): that one is meant for this command,
    the daemon runs with its own, so the command searches in its own process."""
    named = [name for name in os.environ if name.startswith(SETTING_PREFIXES) and name not in UNRELATED]
    if not named:
        return {}
    if named == [EMBEDDING_ENV]:
        given = {EMBEDDING_ENV: os.environ[EMBEDDING_ENV]}  # a setting's variable: no registry to read
    else:
        from memd.core.settings import SETTINGS

        given = {spec.env: os.environ[spec.env] for spec in SETTINGS if spec.env and os.environ.get(spec.env)}
    embedding = given.pop(EMBEDDING_ENV, None) or None
    if any(env not in UNRELATED for env in given) or embedding not in (None, NO_MODEL):
        return None
    return {"words": True} if embedding == NO_MODEL else {}


def _read_line(conn: socket.socket, limit: int | None = None) -> bytes | None:
    """What the other side sends up to its newline (or until it closes); None past ``limit`` bytes."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        data += chunk
        if limit is not None and len(data) > limit:
            return None
    return data


def _line(data: dict[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
