"""Calls to an OpenAI-compatible chat endpoint: bounded, accounted, breaker-guarded.

Every call sends ``max_tokens``; its time is bounded by the call timeout and
by what is left of the run's budget (wall time and tokens). Every call that
reached the wire is written to the ledger: with the server's ``usage`` when it
gives one; else memd's own estimate, marked ``estimated`` (a timed-out call:
the server may well have computed more); a request the server refused before
processing it (HTTP 4xx) books nothing. Endpoint failures feed the circuit
breaker (breaker.py); a call cut short by memd's own time budget is not one.
An HTTP 400 counts when it repeats the previous failure's cause. Only HTTP
429 is retried here; a timeout, a refused connection or a 5xx is reported at
once, so one bad step costs one timeout at most. The timeout bounds the whole
call, not only each read: a server trickling its reply byte by byte is cut
off like a silent one.

The context window is the configured one (``llm.context_tokens``), else what
the server reports (llama.cpp's ``/props``, a ``/models`` entry or its
``meta``), else ``DEFAULT_CONTEXT``. A 400 saying the prompt exceeds the
window lowers the window memd sizes prompts to (to the number the server
names, and below the rejected request), so the caller asks again with a
smaller batch; the identical request is never sent again.

Every message is redacted before it is sent (outgoing.py): a model endpoint
is someone else's machine.

The ``openai`` package takes about a second to import, so it is imported on
the first call, never at start-up.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from memd.core.config import LLMSettings
from memd.core.errors import ConfigError, MemdError
from memd.core.ledger import Call, record
from memd.core.tokens import count_tokens
from memd.engine.breaker import Breaker, Unavailable
from memd.engine.deadline import DEADLINE_GRACE, Overdue, read_url, within
from memd.engine.outgoing import redacted
from memd.engine.output import BadOutput, Reply
from memd.engine.sizes import estimated_tokens, prompt_size
from memd.engine.window import CONTEXT_ERROR, DEFAULT_CONTEXT, context_in, requested_in, server_message, window_in

PROBE_SECONDS = 3.0
MAX_WAIT = 10.0  # longest pause before retrying a rate-limited call
_STEP_ERRORS = {400, 413, 422}  # the request's own fault: the next step may well succeed


MAX_SCALE = 4.0  # server tokens per memd-estimated token, at most


class ModelError(MemdError):
    """The endpoint failed (HTTP error, timeout, refused connection), or the
    run's own time budget ended the call; ``cause`` says which, in a word."""

    def __init__(self, message: str, cause: str = "endpoint failed") -> None:
        super().__init__(message)
        self.cause = cause


class ContextExceeded(ModelError):
    """The server refused the prompt as longer than the model's window (HTTP 400)."""


class BudgetSpent(Unavailable):
    """The run's own model budget (time or tokens) is spent: memd's limit, not the endpoint's failure."""


__all__ = ["BudgetSpent", "ContextExceeded", "ModelClient", "ModelError", "Unavailable"]


@dataclass
class _Run:
    name: str = ""
    started: float = 0.0
    tokens: int = 0


def is_local(base_url: str | None) -> bool:
    """True when requests stay on this machine (loopback endpoint)."""
    if not base_url:
        return False
    host = urlparse(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ModelClient:
    def __init__(self, settings: LLMSettings, ledger: Path, health: Path | None = None) -> None:
        if not settings.model:
            raise ConfigError("no model configured (set [llm] model or MEMD_MODEL)")
        key = settings.api_key
        if key is None and not is_local(settings.base_url):
            raise ConfigError(
                f"the endpoint {settings.base_url or 'api.openai.com'} needs an API key in ${settings.api_key_env}"
            )
        self.settings = settings
        self.ledger = ledger
        self.breaker = Breaker(
            health,
            settings.base_url or "https://api.openai.com/v1",
            settings.breaker_failures,
            settings.breaker_cooldown,
        )
        self._key = key or "not-needed"  # local servers ignore the key, the client insists on one
        self._client: Any = None
        self._run = _Run(started=time.monotonic())
        self._contexts: dict[str, int] = {}  # model -> window, in the server's tokens
        # Server tokens per token of memd's estimate, learned from what the
        # server counted (usage, refusals); windows are divided by it, so a
        # tokenizer finer than the estimate still gets prompts that fit.
        self._scale = 1.0
        self._refused: dict[str, str] = {}  # requests the server refused for their size -> why

    # --- runs and their budget ----------------------------------------------

    @property
    def run(self) -> str:
        return self._run.name

    @run.setter
    def run(self, name: str) -> None:
        self.begin(name)

    def begin(self, name: str) -> None:
        """A new run (a consolidation, an ingest, an ask) with a fresh budget."""
        self._run = _Run(name, time.monotonic())
        self.breaker.begin_run()

    def available(self) -> None:
        """Raise Unavailable when this run may make no more calls."""
        self.breaker.check()
        spent = time.monotonic() - self._run.started
        if spent >= self.settings.budget_time:
            raise BudgetSpent(f"the model budget of this run is spent ({round(spent)}s of model time)")
        if self._run.tokens >= self.settings.budget_tokens:
            raise BudgetSpent(f"the model budget of this run is spent ({self._run.tokens} tokens)")

    def _remaining_seconds(self) -> float:
        return self.settings.budget_time - (time.monotonic() - self._run.started)

    # --- the context window --------------------------------------------------

    def context_tokens(self, model: str | None = None) -> int:
        """The window prompts are sized to, in memd's estimated tokens: the
        configured window, else the one the server reports, else
        DEFAULT_CONTEXT, lower once the server refused a prompt as too long
        or counted more tokens than memd's estimate."""
        return int(self._window(model) / self._scale)

    def _window(self, model: str | None = None) -> int:
        chosen = model or self.settings.model or ""
        if chosen in self._contexts:
            return self._contexts[chosen]
        if self.settings.context_tokens:
            return self.settings.context_tokens
        if chosen not in self._contexts:
            health = self.breaker.health
            if health.context_model == chosen:
                self._contexts[chosen] = health.context_tokens or DEFAULT_CONTEXT  # asked before
            else:
                reported, answered = self._probe_context(chosen)
                self._contexts[chosen] = reported or DEFAULT_CONTEXT
                if answered:  # remembered, also when the server offers no number: ask once
                    self.breaker.remember_context(chosen, reported)
        return self._contexts[chosen]

    def _shrink_context(self, model: str, window: int | None, requested: int | None, size: int) -> int:
        """After a refusal for length: the window the server named, the
        server's count of the refused request against memd's estimate
        ``size``, and in any case a window below ``size``, so the next prompt
        is smaller than the refused one."""
        raw = min(window or self._window(model), self._window(model))
        self._contexts[model] = raw
        if requested and size:
            self._learn_scale(requested / size)
        if raw / self._scale >= size:  # the server counts more than memd estimated
            self._scale = raw / max(1, size * 4 // 5)
        if window and not self.settings.context_tokens:
            self.breaker.remember_context(model, window)
        return self.context_tokens(model)

    def _learn_scale(self, ratio: float) -> None:
        self._scale = max(self._scale, min(ratio, MAX_SCALE))

    def _probe_context(self, model: str) -> tuple[int | None, bool]:
        """llama.cpp's /props (n_ctx) or a /models entry (vLLM max_model_len,
        context_length, llama.cpp's meta); an endpoint that offers none keeps
        the default. Also says whether the server answered at all."""
        import urllib.error
        import urllib.request

        base = (self.settings.base_url or "https://api.openai.com/v1").rstrip("/")
        root = base[: -len("/v1")] if base.endswith("/v1") else base
        seconds = min(PROBE_SECONDS, self.settings.timeout)
        answered = False
        for url in (f"{root}/props", f"{base}/models"):
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self._key}"})
            try:
                self.breaker.check()
                body = within(seconds + DEADLINE_GRACE, functools.partial(read_url, request, seconds))
                answered = True
                found = context_in(json.loads(body), model)
            except Unavailable:
                return None, answered
            except urllib.error.HTTPError:
                answered = True
                continue  # this server does not offer that route
            except Overdue:
                self.breaker.failure("timed out")
                return None, answered
            except (urllib.error.URLError, TimeoutError, OSError) as err:
                reason = getattr(err, "reason", err)
                timed_out = isinstance(reason, TimeoutError)
                self.breaker.failure("timed out" if timed_out else f"connection failed: {reason}")
                return None, answered
            except ValueError:
                continue
            if found:
                return found, True
        return None, answered

    # --- one call ------------------------------------------------------------

    def complete(
        self, operation: str, messages: list[dict[str, str]], *, max_tokens: int, model: str | None = None
    ) -> Reply:
        chosen = model or self.settings.model or ""
        self.available()
        messages = redacted(messages)
        request = json.dumps([chosen, messages, max_tokens])
        if request in self._refused:
            # Sending it again would only be refused again.
            raise ContextExceeded(f"{operation}: {self._refused[request]}; not sent again", "context window")
        client = self._openai()
        import openai

        attempt = 0
        while True:
            timeout = max(1.0, min(self.settings.timeout, self._remaining_seconds()))
            cut = timeout < self.settings.timeout  # the run's budget, not the endpoint's timeout, bounds it
            start = time.monotonic()
            try:
                create = functools.partial(
                    client.chat.completions.create,
                    model=chosen,
                    messages=messages,
                    temperature=0,
                    max_tokens=max_tokens,
                    timeout=timeout,
                )
                response = within(timeout + DEADLINE_GRACE, create)
            except Overdue as overdue:
                self._client = None  # its connection is still held by the abandoned read
                err: Exception | None = overdue
            except openai.APIError as caught:
                err = caught
            else:
                err = None
            if err is not None:  # the endpoint's error, or the deadline's
                status = getattr(err, "status_code", None)
                cause = _describe(err)
                refused = status is not None and 400 <= status < 500  # nothing was computed
                if cut and cause == "timed out":
                    self._record(operation, chosen, messages, None, start, max_tokens, "stopped at the run's budget")
                    raise ModelError(
                        f"{operation}: the run's model time budget ran out during the call", "budget"
                    ) from None
                self._record(operation, chosen, messages, None, start, max_tokens, cause, refused=refused)
                if status == 429 and attempt < self.settings.max_retries and self._remaining_seconds() > 1:
                    attempt += 1
                    time.sleep(min(_retry_after(err, attempt), MAX_WAIT, self._remaining_seconds()))
                    continue
                detail = server_message(err)
                if status == 400 and CONTEXT_ERROR.search(detail):
                    size = prompt_size(messages) + max_tokens
                    lowered = self._shrink_context(chosen, window_in(err, detail), requested_in(detail), size)
                    why = f"the server refused the prompt as longer than the model's context (HTTP 400: {detail[:120]})"
                    self._refused[request] = why
                    opened = self.breaker.failure("HTTP 400: prompt over the context window", repeated=True)
                    suffix = "; no more model calls in this run" if opened else f"; prompts now fit {lowered} tokens"
                    raise ContextExceeded(f"{operation}: {why}{suffix}", "context window") from None
                if status in _STEP_ERRORS:
                    # The request's own fault, unless the same refusal keeps coming.
                    opened = self.breaker.failure(f"{cause}: {detail[:80]}" if detail else cause, repeated=True)
                else:
                    opened = self.breaker.failure(cause)
                suffix = "; no more model calls in this run" if opened else ""
                if status in (401, 403):
                    suffix = f"; the endpoint refused the key: check ${self.settings.api_key_env}{suffix}"
                kind = "timeout" if cause == "timed out" else cause.split(":")[0]
                raise ModelError(f"{operation}: the model call failed ({cause}){suffix}", kind) from None
            if not hasattr(response, "choices"):
                # The client hands back the body as text when it is no JSON: an event
                # stream nobody asked for, a proxy's HTML error page with HTTP 200.
                shown = " ".join(str(response).split())[:60]
                self._record(operation, chosen, messages, None, start, max_tokens, "not a chat completion")
                opened = self.breaker.failure("the reply is not a chat completion", repeated=True)
                suffix = "; no more model calls in this run" if opened else ""
                raise ModelError(
                    f"{operation}: the model's reply is not a chat completion (it begins {shown!r}){suffix}",
                    "not a chat completion",
                )
            reply = self._record(operation, chosen, messages, response, start, max_tokens, None)
            self.breaker.success()
            return reply

    def _openai(self) -> Any:
        if self._client is None:
            import openai

            # Retries are memd's (429 only): the client's own would repeat
            # timeouts and refused connections with growing pauses.
            self._client = openai.OpenAI(
                base_url=self.settings.base_url, api_key=self._key, timeout=self.settings.timeout, max_retries=0
            )
        return self._client

    def _record(
        self,
        operation: str,
        model: str,
        messages: list[dict[str, str]],
        response: Any,
        start: float,
        max_tokens: int,
        error: str | None,
        *,
        refused: bool = False,
    ) -> Reply:
        choice = response.choices[0] if response is not None and response.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        finish = getattr(choice, "finish_reason", None) if choice is not None else None
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        estimated = not prompt and not refused  # a refused request cost nothing: book 0, not a guess
        if prompt and error is None:
            self._learn_scale(prompt / max(1, prompt_size(messages)))
        if estimated:
            # The prompt was sent whether or not the server says what it cost.
            prompt = estimated_tokens(messages)
            completion = completion or count_tokens(text)
        self._run.tokens += prompt + completion
        record(
            self.ledger,
            Call(
                operation,
                model,
                prompt,
                completion,
                round(time.monotonic() - start, 3),
                self.run,
                ok=error is None and choice is not None,
                estimated=estimated,
                max_tokens=max_tokens,
                finish=finish,
                error=error or (None if choice is not None else "no choices"),
            ),
        )
        if error is None and choice is None:
            raise BadOutput(f"{operation}: the model returned no choices")
        return Reply(text, finish, prompt, completion)


def _retry_after(err: Any, attempt: int) -> float:
    response = getattr(err, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(header)) if header else 0.5 * 2**attempt
    except ValueError:
        return 0.5 * 2**attempt


def _describe(err: Exception) -> str:
    if isinstance(err, Overdue):
        return "timed out"
    status = getattr(err, "status_code", None)
    if status:
        return f"HTTP {status}"
    name = type(err).__name__
    if "Timeout" in name:
        return "timed out"
    if "Connection" in name:
        cause = err.__cause__ or err.__context__
        detail = str(cause).split("] ")[-1] if cause else ""
        return f"connection failed{': ' + detail if detail else ''}"
    return f"{name}: {err}"
