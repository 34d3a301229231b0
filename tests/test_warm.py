"""Without a daemon, `memd search` starts a warm server that answers the next
searches and leaves once idle, or as soon as the daemon starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memd.app import Memory
from memd.app.init import init_vault
from memd.daemon.serve import Server, request, socket_path
from memd.daemon.status import DaemonLock
from memd.vault.vault import Vault

pytestmark = pytest.mark.slow  # processes that load the model

HANG_GUARD = 120.0  # seconds: a loaded CI machine starts a process slowly; only a hang takes this long


@pytest.fixture
def vault() -> Iterator[Vault]:
    with tempfile.TemporaryDirectory(prefix="m", dir="/tmp") as folder:  # a socket's path is short
        vault = init_vault(Path(folder) / "v").vault
        Memory(vault).add(["Takes coffee with oat milk", "Flight to Kyoto on 3 April", "Pottery class on Tuesdays"])
        yield vault


def memd(vault: Vault, *args: str, warm: str = "2") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMD_WARM_SECONDS": warm}
    done = subprocess.run(
        [sys.executable, "-m", "memd", "--vault", str(vault.root), *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return done


def until(condition: object, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"no {what} in {HANG_GUARD:g} s"
        time.sleep(0.1)


def test_a_search_starts_a_warm_server_that_answers_the_next_and_leaves_when_idle(vault: Vault) -> None:
    sock = socket_path(vault.root)
    alone = json.loads(memd(vault, "search", "kyoto flight", "--json").stdout)
    until(sock.exists, "warm server")
    served = request(vault.root, "search", {"query": "kyoto flight", "limit": 10})
    assert served is not None and served["results"] == alone
    assert json.loads(memd(vault, "search", "kyoto flight", "--json").stdout) == alone
    pid = int((vault.meta_dir / "daemon.warm.lock").read_text())
    until(lambda: not sock.exists(), "leaving after 2 s idle")
    until(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid), "exit")


def test_a_warm_server_sees_an_entry_added_since_it_started(vault: Vault) -> None:
    memd(vault, "search", "pottery", warm="30")
    until(socket_path(vault.root).exists, "warm server")
    memd(vault, "add", "Pottery kiln fired on Friday")
    served = request(vault.root, "search", {"query": "kiln fired", "limit": 10})
    assert served is not None and any("kiln fired" in json.dumps(hit) for hit in served["results"])
    _stop(vault)


def test_a_warm_server_gives_way_to_the_daemon(vault: Vault) -> None:
    memd(vault, "search", "pottery", warm="60")
    sock = socket_path(vault.root)
    until(sock.exists, "warm server")
    warm_pid = int((vault.meta_dir / "daemon.warm.lock").read_text())
    lock = DaemonLock(vault)
    lock.acquire()  # the daemon starts, and serves
    server = Server(vault, Memory(vault))
    try:
        assert server.start()
        until(lambda: not Path(f"/proc/{warm_pid}").exists() or "zombie" in _state(warm_pid), "warm server leaving")
        assert sock.exists()  # the daemon's socket was left alone
        assert request(vault.root, "search", {"query": "pottery", "limit": 10}) is not None
        assert server.served == 1
    finally:
        server.stop()
        lock.release()


def test_a_words_only_search_starts_a_warm_server_too_and_sigterm_takes_its_socket_away(vault: Vault) -> None:
    sock = socket_path(vault.root)
    env = {**os.environ, "MEMD_WARM_SECONDS": "60", "MEMD_EMBEDDING": "none"}
    command = [sys.executable, "-m", "memd", "--vault", str(vault.root), "search", "kyoto flight", "--json"]
    alone = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
    until(sock.exists, "warm server")
    served = request(vault.root, "search", {"query": "kyoto flight", "limit": 10, "words": True})
    assert served is not None and served["results"] == json.loads(alone)
    pid = int((vault.meta_dir / "daemon.warm.lock").read_text())
    # The setting was that search's: the server answers the next ones with the vault's own model.
    assert b"MEMD_EMBEDDING=" not in Path(f"/proc/{pid}/environ").read_bytes()
    _stop(vault)
    assert not sock.exists()  # a stale socket would make the next search try it first


def test_no_warm_server_when_the_idle_time_is_zero(vault: Vault) -> None:
    memd(vault, "search", "pottery", warm="0")
    time.sleep(1.0)
    assert not socket_path(vault.root).exists() and not (vault.meta_dir / "daemon.warm.lock").exists()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


def _stop(vault: Vault) -> None:
    pid = int((vault.meta_dir / "daemon.warm.lock").read_text())
    os.kill(pid, 15)
    until(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid), "exit")
