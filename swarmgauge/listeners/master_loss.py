"""A worker whose master is gone stops loading within seconds and exits non-zero, saying so.

Locust's worker gives up on a silent master only after ``MASTER_HEARTBEAT_TIMEOUT`` (60 s in Locust 2.47's
``runners.py``), then quits with exit 0: after a SIGKILL (the OOM killer) of the master, the workers went on loading
the target for a minute nobody measured and looked like a success. Its master answers every heartbeat the worker
sends each ``HEARTBEAT_INTERVAL`` (1 s) and marks a worker missing after ``HEARTBEAT_LIVENESS`` (3) silent ones.
Locust's 60 s is kept as it is (it also covers a worker waiting for its first spawn, when nothing is loaded);
swarmgauge adds the tighter rule where it matters: while the worker runs users, ``--master-lost-after`` seconds
without a heartbeat answer (default 6: twice the master's own liveness window, so a master busy for a moment is not
taken for dead) stop the users and end the worker with exit 1 and one line naming the master.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import STATE_RUNNING, STATE_SPAWNING, WorkerRunner

from swarmgauge.core import option_kinds
from swarmgauge.core.options import add_option

log = logging.getLogger(__name__)

DEFAULT_MASTER_LOST_AFTER_S = 6.0
CHECK_INTERVAL_S = 0.5
LOADING = (STATE_RUNNING, STATE_SPAWNING)
EXIT_MASTER_LOST = 1


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--master-lost-after",
        kind=option_kinds.POSITIVE_SECONDS,
        type=float,
        default=DEFAULT_MASTER_LOST_AFTER_S,
        help="a worker running users stops and exits 1 after this many seconds without a heartbeat from its master",
    )


class MasterWatch:
    """The worker's view of its master: when it last answered a heartbeat; polled until the process quits."""

    def __init__(self, environment: Environment, runner: WorkerRunner, lost_after: float) -> None:
        self.environment = environment
        self.runner = runner
        self.lost_after = lost_after
        self.last_heard: float | None = None
        self.quitting = False

    def heard(self, **_kwargs: Any) -> None:
        self.last_heard = time.monotonic()

    def silent_for(self) -> float:
        return 0.0 if self.last_heard is None else time.monotonic() - self.last_heard

    def watch(self) -> None:
        """Checks twice a second, for as long as the worker lives (ended by ``quitting``)."""
        while not self.quitting:
            gevent.sleep(CHECK_INTERVAL_S)
            if self.runner.state in LOADING and self.silent_for() > self.lost_after:
                self.give_up()
                return

    def give_up(self) -> None:
        log.error(
            "swarmgauge: lost the master at %s:%s: no heartbeat answer for %.0f s while running users; "
            "stopping this worker (exit %d)",
            self.runner.master_host,
            self.runner.master_port,
            self.silent_for(),
            EXIT_MASTER_LOST,
        )
        self.environment.process_exit_code = EXIT_MASTER_LOST
        self.runner.quit()


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    runner = environment.runner
    if not isinstance(runner, WorkerRunner):
        return
    lost_after = float(getattr(environment.parsed_options, "master_lost_after", DEFAULT_MASTER_LOST_AFTER_S))
    watch = MasterWatch(environment, runner, lost_after)
    environment.events.heartbeat_received.add_listener(watch.heard)
    environment.events.quitting.add_listener(lambda **_: setattr(watch, "quitting", True))
    gevent.spawn(watch.watch)
