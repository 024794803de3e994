"""``KneoUser``: run dispatch against kneo-serv through ``KneoClient`` (``users/kneo_client.py``), reconciled at the end.

``--kneo-mode`` picks the client's request types: ``sync`` (``run sync``), ``queued`` (``run submit`` and its polls,
``run queued`` end to end) or ``batch``, the capacity page's queue mode: the users submit ``--kneo-batch`` runs between
them as fast as they can (the dispatch fan-out); once the last submit is answered the plan ends at its next tick (a
local run's; a worker's users idle until the master's plan ends) and the service drains them in the run's drain; the
drain rate and each run's queue wait are read from the store at the end (``kneo.json`` ``queue_drain``). ``--kneo-hosts`` spreads the users
over several service processes on one PostgreSQL (the page's scaling advice), round robin. Workers send their
``RunLedger`` to the master, which reconciles it with the store (``users/kneo_ledger.py``) and gates the run on
``kneo_mismatches==0`` (exit 3).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar

import gevent
from locust import User, constant, events, task
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core import hooks, option_kinds, run_context, worker_channel
from swarmgauge.core.locust_compat import default_stop_timeout
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.protocols.kneo import METRIC_NAMES
from swarmgauge.users.kneo_client import TARGETS, KneoClient
from swarmgauge.users.kneo_ledger import MISMATCH_TERM, ledger_for, reconcile_run, run_tag, store_locator

__all__ = ["MISMATCH_TERM", "KneoClient", "KneoUser", "ledger_for", "reconcile_run", "run_tag", "store_locator"]
MODES = ("sync", "queued", "batch")
log = logging.getLogger(__name__)
BATCH_IDLE_S = 0.5
DEFAULT_STOP_TIMEOUT = 15.0  # without --stop-timeout, runs in flight at the end finish, so the ledger is exact


def _option(parser: Any, flag: str, text: str, **kwargs: Any) -> None:
    """One Locust option with its environment variables, shown in the web UI unless told."""
    kwargs.setdefault("include_in_web_ui", True)
    add_option(parser, flag, help=text, **kwargs)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    _option(parser, "--kneo-spec", "spec_path of each run, relative to the service's spec root", default="echo.yaml")
    _option(parser, "--kneo-target", "run target: agent or workflow", default="agent", choices=TARGETS)
    _option(
        parser,
        "--kneo-mode",
        "sync (200, inline), queued (202, then poll) or batch (submit --kneo-batch runs, "
        "then let the service drain them; a local run's plan ends once they are sent)",
        default="sync",
        choices=MODES,
    )
    _option(
        parser,
        "--kneo-batch",
        "batch mode: runs the users submit between them (per Locust process)",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=500,
    )
    _option(
        parser,
        "--kneo-hosts",
        "more service URLs (comma-separated) the users are spread over with --host, "
        "round robin: several kneo-serv processes on one PostgreSQL",
        default="",
    )
    _option(parser, "--kneo-api-key", "API key sent as Authorization: Bearer", default="", is_secret=True)
    _option(parser, "--kneo-input", "input text of each run", default="hello")
    _option(
        parser,
        "--kneo-idempotency",
        "send an Idempotency-Key per run and resend once, same key, when no response came",
        action="store_true",
        default=False,
    )
    _option(
        parser,
        "--kneo-poll-timeout",
        "seconds a queued run may take to reach a terminal status",
        kind=option_kinds.POSITIVE_SECONDS,
        type=float,
        default=60.0,
    )
    _option(
        parser,
        "--kneo-run-tag",
        "metadata.swarmgauge_run of every run (default: generated once per test run)",
        default="",
        include_in_web_ui=False,
    )
    _option(
        parser,
        "--kneo-store",
        "reconcile against this store at the end: a PostgreSQL DSN or the SQLite "
        "file's path (kept out of the web UI: a DSN carries a password)",
        default="",
        include_in_web_ui=False,
    )
    worker_channel.keep_on_master("kneo_store")  # only the master reconciles; a DSN carries a password
    _option(
        parser,
        "--kneo-store-file",
        "read --kneo-store from this file (what 'swarmgauge target kneo' prints as store-file)",
        default="",
    )
    _option(
        parser,
        "--kneo-drain-timeout",
        "seconds to wait at the end for the store's runs to finish",
        kind=option_kinds.POSITIVE_SECONDS,
        type=float,
        default=30.0,
    )
    _option(
        parser,
        "--kneo-no-gauges",
        "do not sample the service's /metrics gauges (sampled from --host by default)",
        action="store_true",
        default=False,
    )


def service_hosts(host: str, extra: str) -> list[str]:
    """``--host`` then each ``--kneo-hosts`` URL, without repeats; a URL that is not http(s) is a UsageError."""
    hosts: list[str] = []
    for url in [host, *str(extra or "").split(",")]:
        url = url.strip().rstrip("/")
        if not url:
            continue
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--kneo-hosts takes http(s) URLs, not {url!r}")
        if url not in hosts:
            hosts.append(url)
    return hosts


def take_batch_ticket(environment: Environment, size: int) -> bool:
    """One run of this process's batch, while any is left (give it back with :func:`batch_run_sent`)."""
    spread = _Spread.of(environment)
    if spread.batch_left is None:
        spread.batch_left = max(0, int(size))
    if spread.batch_left <= 0:
        spread.batch_left = 0
        return False
    spread.batch_left -= 1
    spread.sending += 1
    return True


def batch_run_sent(environment: Environment) -> None:
    """A batch run's submit is answered (or failed); after the batch's last, a local run's plan ends at its next tick:
    the seconds of a hold left after the batch measured nothing (a 4 s hold over a 1 s fan-out), the drain follows."""
    spread = _Spread.of(environment)
    spread.sending -= 1
    if spread.batch_left or spread.sending or spread.ended or isinstance(environment.runner, WorkerRunner):
        return
    if hooks.end_plan(environment):
        spread.ended = True
        log.info("kneo: the batch is submitted (--kneo-batch): the plan ends here, the drain follows")


@dataclass
class _Spread(PerEnvironment):
    """Owned by ``users/kneo_user.py``: this process's batch runs still to send, and how many users it spawned
    (the round robin over ``--kneo-hosts``)."""

    batch_left: int | None = None
    sending: int = 0  # batch submits not answered yet
    ended: bool = False  # the batch's last submit ended the plan
    spawned: int = 0


class KneoUser(User):
    """Dispatches runs in ``--kneo-mode`` (sync, queued or batch) against ``--host`` (and ``--kneo-hosts``, round
    robin); closed loop by default."""

    abstract = True
    needs_host: ClassVar[str] = "http://HOST:PORT"  # checked at init (users.option_checks), before any load
    wait_time = constant(0)
    feeder_columns: ClassVar[tuple[str, ...]] = ("input",)  # --feeder: each run's input text

    def feed_input(self) -> None:
        """With ``--feeder``, this run's input text is the next row's ``input`` (else ``--kneo-input``)."""
        row = hooks.next_row(self)
        if row is not None:
            self.client.input_text = str(row["input"])

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        if not self.host:
            raise UsageError("KneoUser needs --host http://127.0.0.1:PORT (or the locustfile's embedded target)")
        options = environment.parsed_options
        hosts = service_hosts(self.host, getattr(options, "kneo_hosts", "") or "")
        spread = _Spread.of(environment)
        self.host = hosts[spread.spawned % len(hosts)]
        spread.spawned += 1
        self.batch_size = int(getattr(options, "kneo_batch", 500) or 0)
        self.mode = getattr(options, "kneo_mode", "sync")
        if self.mode not in MODES:
            raise UsageError(f"--kneo-mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        self.client = KneoClient(
            self.host,
            request_events=environment.events,
            environment=environment,
            api_key=getattr(options, "kneo_api_key", "") or "",
            spec_path=getattr(options, "kneo_spec", "echo.yaml"),
            target=getattr(options, "kneo_target", "agent"),
            input_text=getattr(options, "kneo_input", "hello"),
            tag=run_tag(environment),
            ledger=ledger_for(environment),
            idempotency=bool(getattr(options, "kneo_idempotency", False)),
            poll_timeout=float(getattr(options, "kneo_poll_timeout", 60.0)),
            user=self,
        )

    @task
    def run_once(self) -> None:
        if self.mode == "batch":
            if not take_batch_ticket(self.environment, self.batch_size):
                gevent.sleep(BATCH_IDLE_S)
                return
            try:
                self.feed_input()  # a feeder's stop propagates, as in the other modes
                try:
                    self.client.submit()
                except Exception:  # noqa: BLE001 - recorded as the submit's failure
                    pass
            finally:
                batch_run_sent(self.environment)
            return
        self.feed_input()
        if self.mode == "sync":
            try:
                self.client.dispatch()
            except Exception:  # noqa: BLE001 - recorded as the request's failure
                pass
        else:
            self.client.queued()


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    if not any(issubclass(u, KneoUser) for u in environment.user_classes):
        return  # imported (by swarmgauge.api, say) into a run without kneo users: no ledger, no gauges
    default_stop_timeout(environment, DEFAULT_STOP_TIMEOUT)
    if isinstance(environment.runner, WorkerRunner):
        return
    run_tag(environment)
    ledger_for(environment)
    options = environment.parsed_options
    if options is None:
        return
    stop_on_usage_error(lambda env: store_locator(env.parsed_options), environment)
    if getattr(options, "kneo_mode", "sync") == "batch" and int(getattr(options, "kneo_batch", 500) or 0) < 1:
        stop_on_usage_error(_bad_batch, environment)
    stop_on_usage_error(
        lambda env: service_hosts(env.host or "", getattr(options, "kneo_hosts", "") or ""), environment
    )
    if environment.host and not getattr(options, "kneo_no_gauges", False):
        for host in service_hosts(environment.host, getattr(options, "kneo_hosts", "") or ""):
            hooks.add_sample_source(environment, f"prom:{host}/metrics#{','.join(METRIC_NAMES)}")


def _bad_batch(environment: Environment) -> None:
    raise UsageError(f"--kneo-batch must be at least 1, got {run_context.options(environment).kneo_batch}")


@events.test_start.add_listener
def _on_test_start(environment: Environment, **_: Any) -> None:
    """Each START is a run of its own (the web UI's next START): its whole batch to send, hosts from the first."""
    spread = _Spread.of(environment)
    spread.batch_left, spread.sending, spread.ended, spread.spawned = None, 0, False, 0
