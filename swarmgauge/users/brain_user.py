"""``BrainUser``: the 2dph brain's own stress tool as a Locust user — its weighted mix, extra queries and gates.

The mix (``--brain-mix search:6,get:2,stats:1,audit:1``, the stress tool's default) picks each iteration's endpoint;
``get`` asks for an id seen in an earlier search. Answers are checked by ``users/brain_client.py`` (``PoolExhausted``
apart from other ``BackendError``s); a refused, reset or timed-out call is ``BrainUnreachable`` and the user backs off
(``users/backoff.py``). The stress tool's gates become default SLOs (health p95 < 500 ms, search
p95 < 1,000 ms, get p95 < 200 ms, errors < 1 % per endpoint).
"""

from __future__ import annotations

import random
import time
from typing import Any, cast

from locust import FastHttpUser, constant, events, task
from locust.contrib.fasthttp import LocustBadStatusCode
from locust.env import Environment

from swarmgauge.core import hooks, option_kinds
from swarmgauge.core.options import add_option
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.users.backoff import Backoff
from swarmgauge.users.brain_client import MalformedAnswer, classify, unreachable
from swarmgauge.users.recording import fire_unfinished
from swarmgauge.users.single_attempt import send_once

DEFAULT_MIX = "search:6,get:2,stats:1,audit:1"
ENDPOINTS = ("search", "get", "stats", "audit", "health")
DEFAULT_QUERIES = (
    "quic stream",
    "session gateway",
    "memory heap",
    "worker semaphore",
    "brain leaf",
    "vector index",
    "retention prune",
    "latency throughput",
)
LATENCY_GATES = {"health": "GET:/health:p95<500ms", "search": "GET:/search:p95<1000ms", "get": "GET:/get:p95<200ms"}


def parse_mix(text: str) -> dict[str, int]:
    """``search:6,get:2`` -> weights; unknown endpoints, bad or all-zero weights are a :class:`UsageError`."""
    weights: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, weight = part.partition(":")
        if name not in ENDPOINTS:
            raise UsageError(f"--brain-mix: unknown endpoint {name!r} (use {', '.join(ENDPOINTS)})")
        try:
            weights[name] = int(weight or "1")
        except ValueError:
            raise UsageError(f"--brain-mix: weight of {name} is not an integer: {weight!r}") from None
        if weights[name] < 0:
            raise UsageError(f"--brain-mix: weight of {name} is negative")
    if not any(weights.values()):
        raise UsageError("--brain-mix needs at least one endpoint with a positive weight")
    return weights


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--brain-mix",
        kind=option_kinds.parsed_by(lambda text: parse_mix(text)),
        default=DEFAULT_MIX,
        include_in_web_ui=True,
        help="endpoint weights, as the stress tool's --mix (default search:6,get:2,stats:1,audit:1)",
    )
    add_option(
        parser,
        "--brain-query",
        action="append",
        default=[],
        include_in_web_ui=True,
        help="extra search query (repeatable), as the stress tool's --q",
    )
    add_option(
        parser,
        "--brain-embedded-args",
        kind=option_kinds.embedded_args("brain"),
        default="",
        include_in_web_ui=False,
        help="options for the brain stand-in started when --host is empty",
    )


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    parsed = environment.parsed_options
    if parsed is None:
        return
    stop_on_usage_error(lambda env: parse_mix(env.parsed_options.brain_mix), environment)


def gates(mix: dict[str, int]) -> list[str]:
    """The stress tool's gates for the endpoints a mix calls: latency where it has one, errors < 1 % for each."""
    called = [name for name, weight in mix.items() if weight > 0]
    return [
        *(LATENCY_GATES[name] for name in called if name in LATENCY_GATES),
        *(f"GET:/{name}:fail_ratio<0.01" for name in called),
    ]


def add_gates(environment: Environment, mix: dict[str, int]) -> None:
    """Check the gates as SLOs (exit 3 when one fails), as the stress tool exits 1."""
    hooks.add_slos(environment, gates(mix))


class BrainUser(FastHttpUser):
    """One stress-tool worker: each iteration calls one endpoint, picked by the mix weights."""

    abstract = True
    wait_time = constant(0)

    mix: str | None = None  # a class's own mix; else --brain-mix

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        send_once(self.client)  # each request sent once: the server sees what the counter records
        self.backoff = Backoff()

    def on_start(self) -> None:
        parsed = self.environment.parsed_options
        # --brain-mix is a str option with a default, so the text is never None
        mix_text = self.mix or (getattr(parsed, "brain_mix", DEFAULT_MIX) if parsed else DEFAULT_MIX)
        mix = parse_mix(cast(str, mix_text))
        self.endpoints = [name for name, weight in mix.items() if weight > 0]
        self.weights = [mix[name] for name in self.endpoints]
        extra = list(getattr(parsed, "brain_query", []) or []) if parsed is not None else []
        self.queries = [*DEFAULT_QUERIES, *extra]
        self.random = random.Random(id(self))
        self.seen_ids: list[str] = []

    @task
    def one_call(self) -> None:
        getattr(self, self.random.choices(self.endpoints, self.weights)[0])()

    def _get(self, path: str, params: dict[str, str] | None = None, name: str | None = None) -> Any:
        """GET ``path``; one event (type GET, name the path), a named failure for anything but a JSON 200.

        After a transport fault (``BrainUnreachable``) the next call first waits out the backoff. A call the user is
        stopped in is one ``Unfinished`` failure with its time so far (``users/recording.py``).
        """
        self.backoff.wait()
        started = time.perf_counter()
        try:
            answer = self.client.get(path, params=params, name=name or path, catch_response=True)
        except BaseException as exc:  # Locust's session fires nothing for a request its user was stopped in
            if not isinstance(exc, Exception):
                fire_unfinished(self.environment.events, request_type="GET", name=name or path, started=started)
            raise
        with answer as response:
            fault = response.request_meta.get("exception")
            if fault is not None and not isinstance(fault, LocustBadStatusCode):  # no complete answer came
                self.backoff.failed()
                response.failure(unreachable(fault))
                return None
            self.backoff.succeeded()
            error = classify(response.status_code, response.content or b"")
            if error is None:
                try:
                    document = response.json()
                except ValueError:
                    error = MalformedAnswer(f"{path} answered 200 with a body that is not JSON")
            if error is not None:
                response.failure(error)
                return None
            response.success()
            return document

    def search(self) -> None:
        document = self._get("/search", {"q": self.random.choice(self.queries), "n": "10"})
        if isinstance(document, dict):
            ids: list[str] = [r["id"] for r in document.get("results", []) if isinstance(r, dict) and r.get("id")]
            self.seen_ids = (self.seen_ids + ids)[-200:]

    def get(self) -> None:
        if not self.seen_ids:
            self.search()
            return
        self._get("/get", {"id": self.random.choice(self.seen_ids)})

    def stats(self) -> None:
        self._get("/stats")

    def audit(self) -> None:
        self._get("/audit")

    def health(self) -> None:
        self._get("/health")
