"""Warm searches: while the daemon runs it answers `memd search` over
`.memd/serve.sock`; without it (or with a dead socket) the search runs in its
own process, with the same results either way."""

from __future__ import annotations

import json
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memd.app import Memory
from memd.app.init import init_vault
from memd.cli import main
from memd.daemon.serve import Server, answer, socket_path
from memd.vault.vault import Vault, find_vault


@pytest.fixture
def vault() -> Iterator[Vault]:
    # A short path: a Unix socket's path is limited to about a hundred bytes.
    with tempfile.TemporaryDirectory(prefix="m", dir="/tmp") as folder:
        vault = init_vault(Path(folder) / "v").vault
        Memory(vault).add(["Takes coffee with oat milk", "Flight to Kyoto on 3 April", "Pottery class on Tuesdays"])
        yield vault


def search(vault: Vault, *args: str, verb: str = "search") -> str:
    result = CliRunner().invoke(main, ["--vault", str(vault.root), verb, *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_running_daemon_answers_a_search_with_what_the_process_would_find(vault: Vault) -> None:
    alone = search(vault, "kyoto flight", "--json")
    server = Server(vault, Memory(vault))
    assert server.start()
    try:
        assert oct(socket_path(vault.root).stat().st_mode & 0o777) == "0o600"
        served = search(vault, "kyoto flight", "--json")
        text = search(vault, "oat milk")
    finally:
        server.stop()
    assert server.served == 2
    assert json.loads(served) == json.loads(alone)
    assert "CURRENT.md:7" in text and "oat milk" in text
    assert not socket_path(vault.root).exists()


def test_a_running_daemon_answers_a_question_as_the_process_would(vault: Vault) -> None:
    alone = [search(vault, "when is the Kyoto flight?", *more, verb="ask") for more in ((), ("--json",))]
    server = Server(vault, Memory(vault))
    assert server.start()
    try:
        served = [search(vault, "when is the Kyoto flight?", *more, verb="ask") for more in ((), ("--json",))]
    finally:
        server.stop()
    assert server.served == 2
    assert served[0] == alone[0] and "Flight to Kyoto on 3 April" in served[0]
    assert json.loads(served[1]) == json.loads(alone[1])


def test_a_dead_socket_or_a_stopped_daemon_leaves_the_search_to_its_own_process(vault: Vault) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path(vault.root)))
    listener.close()  # the socket file stays, nobody listens: a daemon killed with -9
    assert "Pottery class" in search(vault, "pottery")


def test_a_request_the_daemon_cannot_read_gets_an_error_and_the_next_one_an_answer(vault: Vault) -> None:
    server = Server(vault, Memory(vault))
    assert server.start()
    try:
        for request in (b"not json\n", b'{"verb": "forget", "args": {}}\n', b'{"verb": "search", "args": {}}\n'):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(30)
                conn.connect(str(socket_path(vault.root)))
                conn.sendall(request)
                reply = json.loads(conn.makefile("rb").readline())
            assert "error" in reply and "results" not in reply
        assert "Flight to Kyoto" in search(vault, "kyoto")
    finally:
        server.stop()
    assert server.served == 4


def test_a_setting_in_the_environment_or_a_model_keeps_the_command_in_its_own_process(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = Server(vault, Memory(vault))
    assert server.start()
    try:
        monkeypatch.setenv("MEMD_INDEX_BACKEND", "whoosh")  # meant for this search alone
        assert "Flight to Kyoto" in search(vault, "kyoto")
        monkeypatch.delenv("MEMD_INDEX_BACKEND")
        assert server.served == 0
        vault.config_path.write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n[engine]\nname = "llm"\n')
        reply = answer(Memory(find_vault(vault.root)), b'{"verb": "ask", "args": {"question": "kyoto?"}}\n')
        assert "asking process" in reply["error"]
    finally:
        server.stop()


def test_a_words_only_search_is_served_as_a_process_with_no_model_answers_it(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MEMD_EMBEDDING=none travels with the request: the daemon's index holds the words whatever its model.
    Memory(vault).add(["Booked the ryokan near the station for the Kyoto trip", "The coffee grinder needs new burrs"])
    monkeypatch.setenv("MEMD_EMBEDDING", "none")

    def both() -> list[str]:
        return [search(vault, "kyoto trip", "--json"), search(vault, "where to stay in kyoto?", "--json", verb="ask")]

    alone = both()
    server = Server(vault, Memory(vault))
    assert server.start()
    try:
        served = both()
        assert server.served == 2
        assert [json.loads(text) for text in served] == [json.loads(text) for text in alone]
        store = server.memory._store
        assert store is not None and store._embedder is None  # no model loaded for words alone
        monkeypatch.delenv("MEMD_EMBEDDING")
        hybrid = search(vault, "kyoto trip", "--json")  # the next search without the setting has the model again
        assert server.served == 3 and not store.words_only
    finally:
        server.stop()
    assert "ryokan" in hybrid


def test_every_setting_a_command_environment_may_give_is_seen_by_the_served_search() -> None:
    # set_here skips the registry when no variable has a setting's prefix: one that had
    # another would send its command to the daemon, which runs with its own settings.
    from memd.core.settings import SETTINGS
    from memd.daemon.serve import SETTING_PREFIXES

    assert all(spec.env.startswith(SETTING_PREFIXES) for spec in SETTINGS if spec.env)
    # The one a request carries is spelt in serve.py, so that its process imports neither.
    from memd.core.settings import spec_for
    from memd.daemon.serve import EMBEDDING_ENV, NO_MODEL
    from memd.index import embedding

    assert spec_for("index.embedding").env == EMBEDDING_ENV and NO_MODEL == embedding.NO_MODEL


def test_a_bug_answering_one_request_leaves_the_search_to_its_process_and_the_serving_on(vault: Vault) -> None:
    class Flaky(Memory):
        calls = 0

        def search(self, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("a bug")
            return super().search(*args, **kwargs)

    logged: list[str] = []
    server = Server(vault, Flaky(vault), logged.append)
    assert server.start()
    try:
        assert "Flight to Kyoto" in search(vault, "kyoto")  # searched in its own process
        assert "Pottery class" in search(vault, "pottery")  # the daemon answers again
    finally:
        server.stop()
    assert server.served == 1 and "RuntimeError: a bug" in logged[0]


def test_something_in_the_sockets_place_leaves_searches_to_their_processes(vault: Vault) -> None:
    socket_path(vault.root).mkdir()
    logged: list[str] = []
    server = Server(vault, Memory(vault), logged.append)
    assert not server.start()
    assert "searches are not served" in logged[0]
    assert "Flight to Kyoto" in search(vault, "kyoto")


def test_a_bad_filter_is_reported_as_the_process_reports_it(vault: Vault) -> None:
    server = Server(vault, Memory(vault))
    assert server.start()
    try:
        result = CliRunner().invoke(main, ["--vault", str(vault.root), "search", "kyoto", "--since", "someday"])
    finally:
        server.stop()
    assert result.exit_code == 1
    assert "someday" in result.output and "Traceback" not in result.output
