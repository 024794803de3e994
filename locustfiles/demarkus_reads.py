"""Mark reads over QUIC, as the demarkus benchmark's read table: FETCH, LOOKUP and LIST users over the seeded corpus.

Pick the users in the web UI's class picker (``locust -f locustfiles/demarkus_reads.py --class-picker``) or by name
(``... FetchUser``). With no ``--host`` the embedded reference server is started, seeded with the deterministic
corpus; ``--mark-embedded-args`` passes it simulation knobs. The benchmark ramp:

    locust -f locustfiles/demarkus_reads.py FetchUser --headless --steps 1,4,16,64 --step-time 20 \
        --mark-embedded-args "--read-delay-ms 9.2 --reads-stat-head --backend-concurrency 3 --read-delay-jitter 0.2" --run-dir runs/reads --csv runs/reads/locust

``FreshFetchUser`` is the "fresh connection per request" row. demarkus-loadtest times a fresh request from before its
dial to its answer (``tools/demarkus-loadtest/main.go``: the client dials inside the timed call), so besides the
``FETCH`` row (the request alone) and ``QUIC``/``handshake`` it records each iteration as ``FETCH+dial``, the
figure the page's fresh rows are.
"""

from __future__ import annotations

import functools
import random
import time
from typing import Any

from locust import constant, events, task
from locust.env import Environment

import swarmgauge.locust  # noqa: F401 - steps, SLOs, run directory
from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module
from swarmgauge.targets.mark.embedded import CORPUS_SIZE, start_embedded_default
from swarmgauge.targets.mark.seed import TOPICS, corpus_paths
from swarmgauge.users.mark_user import MarkUser
from swarmgauge.users.recording import fire

#: the request type of a fresh iteration timed as demarkus-loadtest times it: dial, request and answer
DIALLED_FETCH = "FETCH+dial"


@events.init.add_listener
def _embedded_default(environment: Environment, **_kwargs: Any) -> None:
    start_embedded_default(environment)


class _CorpusReader(MarkUser):
    abstract = True
    wait_time = constant(0)

    def __init__(self, environment: Environment) -> None:
        """``paths`` and ``random`` are set here, not in ``on_start``: Locust makes a batch of users before their first
        task runs, and an attribute a class's instances first get after a score of them exist no longer fits their
        shared attribute table (CPython 3.11 sizes each new instance's to what the class has shown so far), so each
        user then built a dictionary of its own, ~0.4-0.8 KiB per user for the run."""
        super().__init__(environment)
        count = int(getattr(environment.parsed_options, "mark_corpus", CORPUS_SIZE) or CORPUS_SIZE)
        self.paths = _shared_corpus_paths(count)
        self.random = _PICKER


_PICKER = random.Random()  # one for every user: a Random each is 2.5 KiB per user, and users need no own sequence


def _pick(paths: tuple[str, ...]) -> str:
    """A uniformly random path: one C call for the number (``random.choice`` runs two Python functions per pick, on
    every FETCH)."""
    return paths[int(_PICKER.random() * len(paths))]


@functools.lru_cache(maxsize=8)
def _shared_corpus_paths(count: int) -> tuple[str, ...]:
    """The corpus paths, built once for all users (per user they were 22 KiB and the whole corpus generated)."""
    return tuple(corpus_paths(count))


class FetchUser(_CorpusReader):
    """FETCH a random corpus document on its user's pooled connection."""

    @task
    def fetch(self) -> None:
        self.client.fetch(self.fed_path() or _pick(self.paths), name="/corpus/{topic}/{doc}")


class FreshFetchUser(_CorpusReader):
    """FETCH with a new QUIC connection per request (the handshake shows as QUIC/handshake, the whole iteration as
    FETCH+dial)."""

    connection = "fresh"

    @task
    def fetch(self) -> None:
        name = "/corpus/{topic}/{doc}"
        started = time.perf_counter()
        response = self.client.fetch(_pick(self.paths), name=name)
        fire(
            self.environment.events,
            request_type=DIALLED_FETCH,
            name=name,
            response_time=(time.perf_counter() - started) * 1000.0,
            response_length=len(response.body) if response is not None else 0,
            exception=self.client.last_error if response is None else None,
        )


class LookupUser(_CorpusReader):
    """LOOKUP a two-topic query over the whole world (it takes no ``--feeder`` column)."""

    feeder_columns = ()

    @task
    def lookup(self) -> None:
        query = " ".join(self.random.sample(TOPICS, 2))
        self.client.lookup("/", query, limit=10)  # named by its scope: Locust shows "LOOKUP /"


class ListUser(_CorpusReader):
    """LIST a topic directory of the corpus."""

    @task
    def list_topic(self) -> None:
        self.client.list(self.fed_path() or f"/corpus/{self.random.choice(TOPICS)}", name="/corpus/{topic}")
