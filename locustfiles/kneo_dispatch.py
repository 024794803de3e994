"""Run dispatch against kneo-serv: the capacity page's sweep (sync per store, queued) as HTTP load.

Run against a service you started (``swarmgauge target kneo`` prints the URL and a store file)::

    locust -f locustfiles/kneo_dispatch.py --headless --host http://127.0.0.1:PORT --kneo-store-file FILE \\
        --plan kneo-sync-sweep --run-dir runs/kneo

Without ``--host`` (a local run) the locustfile starts the real kneo-serv itself (``--kneo-embedded-store sqlite``
or ``postgres`` on a throwaway cluster), reconciles against its store, samples its ``/metrics`` gauges and RSS,
and stops it when Locust quits. Every listener is on; the shape comes from ``--plan`` or the step options.
"""

from __future__ import annotations

import logging
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import LocalRunner

import swarmgauge.locust  # noqa: F401
from swarmgauge.core import option_kinds, run_context
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.options import add_option
from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.listeners.resources import add_sample_source
from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module
from swarmgauge.targets.kneo import KneoService
from swarmgauge.targets.kneo.provider_delay import provider_delay_env
from swarmgauge.targets.kneo.service import DEFAULT_IDLE_POLL_S, idle_poll_env, launch_fork_parent
from swarmgauge.targets.postgres import PostgresCluster
from swarmgauge.users.kneo_user import KneoUser

log = logging.getLogger(__name__)


class KneoDispatchUser(KneoUser):
    """``--kneo-mode sync`` or ``queued`` runs of ``--kneo-spec`` (the echo spec by default)."""

    abstract = False


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--kneo-embedded-store",
        default="sqlite",
        choices=("sqlite", "postgres"),
        include_in_web_ui=False,
        help="without --host: the store of the kneo-serv this locustfile starts",
    )
    add_option(
        parser,
        "--kneo-embedded-workers",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=1,
        include_in_web_ui=False,
        help="without --host: KNEO_SERV_WORKER_CONCURRENCY",
    )
    add_option(
        parser,
        "--kneo-embedded-processes",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=1,
        include_in_web_ui=False,
        help="without --host: kneo-serv processes on the one store, PostgreSQL or SQLite file (users spread "
        "round robin)",
    )
    add_option(
        parser,
        "--kneo-embedded-queue-depth",
        kind=option_kinds.COUNT,
        type=int,
        default=0,
        include_in_web_ui=False,
        help="without --host: KNEO_SERV_MAX_QUEUE_DEPTH",
    )
    add_option(
        parser,
        "--kneo-embedded-fsync",
        action="store_true",
        default=False,
        include_in_web_ui=False,
        help="without --host: the throwaway PostgreSQL keeps fsync on, as the page's (default off: faster start)",
    )
    add_option(
        parser,
        "--kneo-embedded-idle-poll",
        kind=option_kinds.POSITIVE_SECONDS,
        type=float,
        default=DEFAULT_IDLE_POLL_S,
        include_in_web_ui=False,
        help="without --host: KNEO_SERV_WORKER_IDLE_POLL_SECONDS, how long an idle worker sleeps before it looks at "
        "the queue again (kneo-serv's own default is 1)",
    )
    add_option(
        parser,
        "--kneo-embedded-provider-delay",
        kind=option_kinds.NON_NEGATIVE,
        type=float,
        default=0.0,
        include_in_web_ui=False,
        help="without --host: seconds each run waits for its simulated provider (the page's --agent-delay)",
    )


class EmbeddedKneo:
    """The kneo-serv (and PostgreSQL) this locustfile started; stopped when Locust quits."""

    def __init__(self) -> None:
        self.service: Any = None
        self.cluster: Any = None
        self.fork_parent: Any = None  # the service's once it is built; stopped with it

    def start(self, options: Any) -> Any:
        store = options.kneo_embedded_store
        try:
            dsn = None
            delay_env = provider_delay_env(float(options.kneo_embedded_provider_delay or 0.0))
            self.fork_parent = launch_fork_parent()  # kneo-serv's imports run while PostgreSQL starts
            if store == "postgres":
                self.cluster = PostgresCluster(fsync=bool(options.kneo_embedded_fsync)).start()
                dsn = self.cluster.dsn
            self.service = KneoService(
                fork_parent=self.fork_parent,
                store=store,
                dsn=dsn,
                worker_concurrency=options.kneo_embedded_workers,
                processes=options.kneo_embedded_processes,
                max_queue_depth=options.kneo_embedded_queue_depth,
                extra_env={**delay_env, **idle_poll_env(float(options.kneo_embedded_idle_poll))},
            ).start()
        except BaseException:
            self.stop()
            raise
        return self.service

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()
            self.service = None
        elif self.fork_parent is not None:  # the cluster failed before the service took it
            self.fork_parent.close()
        self.fork_parent = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None


_embedded = EmbeddedKneo()


def start_embedded(environment: Environment) -> None:
    """A local run without ``--host`` gets its own kneo-serv; a distributed one must name the service."""
    if environment.host:
        return
    if not isinstance(environment.runner, LocalRunner):
        if environment.runner is not None and not hasattr(environment.runner, "client_id"):
            raise UsageError("a distributed kneo run needs --host (start the service with 'swarmgauge target kneo')")
        return

    options = run_context.options(environment)
    try:
        service = _embedded.start(options)
    except SwarmgaugeError as exc:
        raise UsageError(f"could not start the embedded kneo-serv: {exc}") from None
    environment.host = service.url
    KneoDispatchUser.host = service.url
    options.kneo_hosts = ",".join(service.urls[1:])
    if not options.kneo_store and not options.kneo_store_file:
        options.kneo_store = service.store_locator
    if not options.kneo_no_gauges:
        for spec in service.gauge_sources():
            add_sample_source(environment, spec)
        if _embedded.cluster is not None:  # the store's side of the CPU, beside the service's and the generator's
            add_sample_source(environment, _embedded.cluster.sample_spec())
    log.info("embedded kneo-serv at %s", service.url)


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    from swarmgauge.errors import stop_on_usage_error

    stop_on_usage_error(start_embedded, environment)


@at_end("targets stopped")
def _stop_embedded(_environment: Environment) -> None:
    """The embedded service and its store stop at the lifecycle's last step, after the ledger read the store."""
    _embedded.stop()
