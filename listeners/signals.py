"""SIGTERM and SIGINT end a run the way the end of its plan does, so nothing measured or written is lost.

Compose and Kubernetes stop containers with SIGTERM. Locust installs its own SIGTERM handler only after
``start_automatic_run()`` returns, which it never does while a shape runs: until then SIGTERM kills the process
with no files, no exit code and the embedded target orphaned. This module installs a handler at ``init`` on the
master or local runner: the first SIGTERM or SIGINT asks a swarmgauge shape to end its plan now (stop the users,
collect every worker's last figures, then let Locust quit, which stops the workers and fires ``quitting``, where
the listeners write their files and the embedded targets stop). A second signal, or a run with no swarmgauge shape,
falls back to Locust's own Ctrl+C path (``KeyboardInterrupt``); before the run has started (a master waiting for
its workers) the process exits with 128 + the signal number, as nothing was measured. Nothing is written here.

Workers and the web UI keep Locust's own SIGTERM handler, which it installs before their main loop starts: a
worker's shutdown fires ``quitting``, where it first sends its last per-step figures (here) and then tells the master
it is gone; the web UI's shutdown fires ``quitting`` as well.
"""

from __future__ import annotations

import logging
import signal
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import STATE_INIT, WorkerRunner

logger = logging.getLogger("swarmgauge.signals")

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopOnSignal:
    """The handler: ends the plan on the first signal, falls back to ``KeyboardInterrupt`` on the next."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.received: list[int] = []

    def __call__(self, signum: int, _frame: Any) -> None:
        self.received.append(signum)
        name = signal.Signals(signum).name
        shape = getattr(self.environment, "shape_class", None)
        runner = self.environment.runner
        if runner is not None and runner.state == STATE_INIT:
            logger.info("Got %s before the run started: exiting, nothing was measured", name)
            raise SystemExit(128 + signum)  # gevent hands it to the main greenlet; atexit stops embedded targets
        request_end = getattr(shape, "request_end", None)
        if len(self.received) == 1 and callable(request_end) and runner is not None:
            logger.info("Got %s: ending the plan now (files are written as at its end; again to quit at once)", name)
            request_end()
            return
        logger.info("Got %s: stopping at once", name)
        raise KeyboardInterrupt(name)


def install(environment: Environment) -> StopOnSignal | None:
    """Install the handler on a master or local runner (workers keep Locust's); returns it, or None."""
    if isinstance(environment.runner, WorkerRunner):
        return None
    handler = StopOnSignal(environment)
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, handler)
    return handler


def _send_last_figures_on_quit(environment: Environment) -> None:
    """Added at ``init`` (after the runner's own listeners), so it runs before the worker tells the master it quit."""

    def on_quitting(**_kwargs: Any) -> None:
        from swarmgauge.listeners import steps

        steps.send_last_figures(environment)

    environment.events.quitting.add_listener(on_quitting)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        _send_last_figures_on_quit(environment)
        return
    options = getattr(environment, "parsed_options", None)
    if options is not None and not getattr(options, "headless", False):
        return  # web UI: Locust's SIGTERM handler (shutdown, which fires quitting) is in place before its main loop
    install(environment)
