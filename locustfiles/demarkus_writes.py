"""Mark writes over QUIC: PUBLISH over N paths with expected-version from the last FETCH, and a fixed-rate soak.

``WriterUser`` writes back to back (the reference page's "writes back to back" row: with the embedded server's
``--commit-interval 1.5s``, one writer makes about 0.67 writes/s). ``SoakWriterUser`` writes at
``--mark-write-rate`` per user (0.5/s, as the 30-minute soak). ``OwnPathWriterUser`` writes back to back on paths
of its own (concurrent writers queue on the commit pacing, never on each other's versions); ``BurstWriterUser`` does
the same until ``--mark-burst-writes`` publishes are answered in all, then ends the run (the page's 4-writer burst
of 200). Writes need ``--mark-token``; with no ``--host`` the
embedded server is started with a generated write token.

    locust -f locustfiles/demarkus_writes.py WriterUser --headless -u 1 -t 60s \
        --mark-embedded-args "--commit-interval 1.5s" --run-dir runs/writes
"""

from __future__ import annotations

import random
import secrets
from typing import Any, ClassVar

import gevent
from locust import constant, constant_throughput, events, task
from locust.env import Environment

import swarmgauge.locust  # noqa: F401
from swarmgauge.core import option_kinds, worker_channel
from swarmgauge.core.options import add_option
from swarmgauge.shapes import PlanShape  # noqa: F401
from swarmgauge.targets.mark.embedded import start_embedded_default
from swarmgauge.users.mark_errors import Conflict, MarkError
from swarmgauge.users.mark_user import MarkUser


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--mark-write-paths",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=20,
        include_in_web_ui=True,
        help="how many documents the writers spread over",
    )
    add_option(
        parser,
        "--mark-retention",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=5,
        include_in_web_ui=True,
        help="versions the server keeps per written document",
    )
    add_option(
        parser,
        "--mark-burst-writes",
        type=int,
        kind=option_kinds.COUNT,
        default=0,
        include_in_web_ui=True,
        help="publishes BurstWriterUsers send in all before the run ends (the page's burst: 200); 0, the default, "
        "sets no count, so the file's every class run together (the web UI's default) writes until stopped",
    )
    add_option(
        parser,
        "--mark-write-rate",
        kind=option_kinds.RATE,
        type=float,
        default=0.5,
        include_in_web_ui=True,
        help="writes/s per SoakWriterUser",
    )


@events.init.add_listener
def _embedded_default(environment: Environment, **_kwargs: Any) -> None:
    parsed = environment.parsed_options
    if environment.host or parsed is None:
        return
    if not parsed.mark_token:
        parsed.mark_token = secrets.token_urlsafe(24)
        worker_channel.share_with_workers("mark_token")  # a throwaway token of our loopback server: workers need it
    start_embedded_default(environment, publish_token=parsed.mark_token)


class WriterBase(MarkUser):
    """FETCH the document's current version, then PUBLISH the next one with that expected-version (no task of its
    own: Locust adds a base class's tasks to every subclass, so a subclass with its own loop starts from here).

    A path this user has not seen yet is created with ``expected-version: 0`` (create-only) instead of a FETCH
    that would only say not-found; if another writer created it first, the conflict is recorded and the path is
    FETCHed from then on.
    """

    abstract = True
    wait_time = constant(0)

    own_paths = False

    def on_start(self) -> None:
        parsed = self.environment.parsed_options
        prefix = f"/load/{id(self):x}-" if self.own_paths else "/load/"
        self.paths = [f"{prefix}doc-{n:03d}.md" for n in range(max(1, parsed.mark_write_paths))]
        self.retention = parsed.mark_retention
        self.random = random.Random(id(self))
        self.known: set[str] = set()
        self.written = 0

    def expected_version(self, path: str) -> int | None:
        """0 for a path not known to exist, else the version of a fresh FETCH (None if that FETCH failed)."""
        if path not in self.known:
            return 0
        response = self.client.fetch(path, name="/load/{doc} (before write)")
        return None if response is None else int(response.metadata.get("version", "0"))

    def publish(self) -> None:
        path = self.random.choice(self.paths)
        expected = self.expected_version(path)
        if expected is None:
            return
        self.written += 1
        body = f"# Load document\n\nWrite {self.written} by {id(self):x}.\n"
        metadata = {"tags": "load, swarmgauge", "retention": str(self.retention)} if self.retention else None
        try:
            self.client.publish(
                path, body, expected_version=expected, metadata=metadata, name="/load/{doc}", reraise=True
            )
        except Conflict:
            pass  # recorded as the failure it is; the path exists, so the next write FETCHes first
        except MarkError:
            return
        self.known.add(path)


class WriterUser(WriterBase):
    """Back to back over the shared paths."""

    abstract = False

    @task
    def write(self) -> None:
        self.publish()


class SoakWriterUser(WriterUser):
    """The soak: the same write at ``--mark-write-rate`` per user, whatever the response time."""

    def wait_time(self) -> float:
        rate = float(getattr(self.environment.parsed_options, "mark_write_rate", 0.5) or 0.5)
        return constant_throughput(rate)(self)


class OwnPathWriterUser(WriterUser):
    """Back to back on paths no other writer touches: concurrent writers wait on the commit pacing only."""

    own_paths = True


class BurstWriterUser(WriterBase):
    """Back to back until ``--mark-burst-writes`` publishes are sent by all of them; after the last answer the run
    ends (as ``-t`` ends it), so the burst is a count of writes, not a time. Without a count it writes as
    ``OwnPathWriterUser`` does."""

    abstract = False
    own_paths = True
    sent: ClassVar[int] = 0
    answered: ClassVar[int] = 0

    @task
    def burst_write(self) -> None:
        total = int(self.environment.parsed_options.mark_burst_writes)
        if not total:
            self.publish()
            return
        if BurstWriterUser.sent >= total:
            gevent.sleep(0.5)
            return
        BurstWriterUser.sent += 1
        try:
            self.publish()
        finally:
            BurstWriterUser.answered += 1
            if BurstWriterUser.answered == total and self.environment.runner is not None:
                gevent.spawn(self.environment.runner.quit)
