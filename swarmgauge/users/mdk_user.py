"""``MDKUser``: a weighted mix of fleet reads and action submits through ``MDKClient`` (``users/mdk_client.py``).

``--mdk-weights`` picks each iteration's request, ``--mdk-action`` / ``--mdk-params`` the submitted action; with
``--mdk-forwarded-for`` each user sends from its own loopback address, so a per-IP limiter sees a fleet, not one client.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from types import SimpleNamespace
from typing import ClassVar

import gevent
import gevent.lock
from locust import User, between, events, task
from locust.env import Environment
from locust.event import EventHook

from swarmgauge.core import hooks, option_kinds
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.errors import UsageError
from swarmgauge.users.mdk_client import (
    DEFAULT_ACTION,
    DEFAULT_PARAMS,
    TASK_NAMES,
    DeviceNotFound,
    MDKClient,
    forwarded_for,
)


@events.init_command_line_parser.add_listener
def _add_options(parser) -> None:
    add_option(
        parser,
        "--mdk-expect-devices",
        kind=option_kinds.COUNT,
        type=int,
        default=0,
        include_in_web_ui=True,
        help="summary fails when deviceCount is below this (0: no check)",
    )
    add_option(
        parser,
        "--mdk-action",
        default=DEFAULT_ACTION,
        include_in_web_ui=True,
        help="action the action task submits",
    )
    add_option(
        parser,
        "--mdk-params",
        kind=option_kinds.parsed_by(lambda text: parse_params(text)),
        default=DEFAULT_PARAMS,
        include_in_web_ui=True,
        help="JSON object of the action's params",
    )
    add_option(
        parser,
        "--mdk-weights",
        kind=option_kinds.parsed_by(lambda text: parse_weights(text)),
        default="telemetry=10,summary=1,alerts=1,action=2",
        include_in_web_ui=True,
        help="task weights, e.g. telemetry=10,summary=1,alerts=1,action=2 (0 disables a task)",
    )
    add_option(
        parser,
        "--mdk-forwarded-for",
        action="store_true",
        default=False,
        include_in_web_ui=True,
        help="send a distinct loopback X-Forwarded-For per user (for a per-IP rate limit)",
    )
    add_option(
        parser,
        "--mdk-timeout",
        kind=option_kinds.POSITIVE_SECONDS,
        type=float,
        default=10.0,
        include_in_web_ui=True,
        help="seconds a Gateway request may take before GatewayTimeout",
    )


def parse_weights(text: str, flag: str = "--mdk-weights") -> dict[str, int]:
    """``NAME=N,...`` over the task names; a refusal names ``flag``, the option it came from."""
    weights = {name: 0 for name in TASK_NAMES}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or name.strip() not in weights:
            raise UsageError(f"{flag}: want NAME=N with NAME in {', '.join(TASK_NAMES)}, got {item!r}")
        try:
            weights[name.strip()] = int(value)
        except ValueError as exc:
            raise UsageError(f"{flag}: {item!r} is not NAME=integer") from exc
        if weights[name.strip()] < 0:
            raise UsageError(f"{flag}: {item!r} is negative")
    if not any(weights.values()):
        raise UsageError(f"{flag}: every task has weight 0")
    return weights


def parse_params(text: str) -> dict:
    try:
        params = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--mdk-params is not JSON: {text!r}") from exc
    if not isinstance(params, dict):
        raise UsageError("--mdk-params must be a JSON object")
    return params


_user_index = itertools.count()
PICK_TRIES = 8  # random draws before a scan for a device not set aside


class FleetCache(PerEnvironment):
    """The device ids this process discovered, shared by its users: one summary for a whole spawn, not one each
    (a summary reads every device, so 200 users discovering at once would queue on the devices for a minute)."""

    def __init__(self) -> None:
        self.lock = gevent.lock.BoundedSemaphore()
        self.device_ids: list[str] = []
        self.aside: set[str] = set()

    def forget(self, device_id: str) -> None:
        if device_id in self.device_ids:
            self.device_ids.remove(device_id)

    def set_aside(self, device_id: str) -> None:
        """Leave ``device_id`` to a drill's own timed reads: reads to one device run one after another, so a user's
        read of it would queue ahead of the drill's and count in the drill's time (the page's drill read alone)."""
        self.aside.add(device_id)


def fleet_cache(environment: Environment) -> FleetCache:
    """The process's fleet of discovered device ids, shared by its users (owned by ``users/mdk_user.py``)."""
    return FleetCache.of(environment)


#: how long the discovery before the load may ask again for devices that did not answer yet (a fleet just started):
#: a summary of 5,000 devices took 5.7 s on a quiet machine; at load 10 to 11 one took 10 s and had 844 of them, and
#: 22 s of asking again had 396 (the stand-in's reads time out there: the index calls such a fleet machine-bound)
DISCOVERY_S = 10.0
DISCOVERY_RETRY_S = 0.5


def discover_before_load(environment: Environment, host: str, devices: int) -> tuple[int, float, int] | None:
    """The users' fleet discovery done once at start-up, before any load: the device ids of a fleet summary, shared
    by this process's users, so no step waits out a summary that reads every device (5.7 s at 5,000 devices on one
    Worker). As the page's harness does before it measures, it asks again (within ``DISCOVERY_S``) until all
    ``devices`` have answered: a summary leaves out a device whose read failed, and right after the stand-in started
    one had 844 of 5,000 on a loaded machine; every device that answered one of them counts. It is no request of the
    run (it comes before it): (devices found, seconds taken, summaries sent), or None when no summary came back (the
    users then discover at their start)."""
    options = environment.parsed_options
    timeout = float(getattr(options, "mdk_timeout", 10.0) or 10.0)
    client = MDKClient(host, SimpleNamespace(request=EventHook()), timeout=timeout)  # fires into no run's figures
    began = time.monotonic()
    found: dict[str, None] = {}  # in the order they first answered
    sent = 0
    try:
        for _ in range(1000):
            sent += 1
            body = client.summary(name="discover")
            found.update(dict.fromkeys(d["deviceId"] for d in (body or {}).get("devices", [])))
            if len(found) >= devices or time.monotonic() - began > DISCOVERY_S:
                break
            gevent.sleep(DISCOVERY_RETRY_S)
    finally:
        client.close()
    if not found:
        return None
    fleet_cache(environment).device_ids = list(found)
    return len(found), time.monotonic() - began, sent


class MDKUser(User):
    """Discovers device ids from the fleet summary, then reads and submits by the ``--mdk-weights`` mix."""

    abstract = True
    needs_host: ClassVar[str] = "http(s)://HOST:PORT"  # the Gateway's base URL, checked at init (users.option_checks)
    wait_time = between(0.05, 0.2)
    weights: dict[str, int] | None = None
    feeder_columns: ClassVar[tuple[str, ...]] = ("device_id",)  # --feeder: the device of each device request

    def __init__(self, environment) -> None:
        super().__init__(environment)
        options = environment.parsed_options
        self.index = next(_user_index)
        self.expect_devices = getattr(options, "mdk_expect_devices", 0) or 0
        self.action_name = getattr(options, "mdk_action", DEFAULT_ACTION) or DEFAULT_ACTION
        self.action_params = parse_params(getattr(options, "mdk_params", DEFAULT_PARAMS) or DEFAULT_PARAMS)
        self.mix = (
            dict(self.weights)
            if self.weights
            else parse_weights(getattr(options, "mdk_weights", None) or "telemetry=10,summary=1,alerts=1,action=2")
        )
        xff = forwarded_for(self.index) if getattr(options, "mdk_forwarded_for", False) else None
        if not self.host:
            raise UsageError("MDKUser needs --host, the Gateway's base URL")
        self.client = MDKClient(
            self.host, environment.events, timeout=getattr(options, "mdk_timeout", 10.0) or 10.0, forwarded_for=xff
        )
        self.device_ids: list[str] = []

    def discover(self) -> None:
        """Device ids from ``GET /api/fleet/summary`` (shared in the process; asked again once all are gone)."""
        fleet = fleet_cache(self.environment)
        with fleet.lock:
            if not fleet.device_ids:
                body = self.client.summary(self.expect_devices, name="discover")
                if body is not None:
                    fleet.device_ids = [d["deviceId"] for d in body["devices"]]
            self.device_ids = list(fleet.device_ids)

    def on_start(self) -> None:
        self.discover()

    def on_stop(self) -> None:
        self.client.close()

    def pick_device(self) -> str | None:
        """The next ``--feeder`` row's ``device_id``, else a discovered device at random, not one set aside for a
        drill (``FleetCache.set_aside``) while another is left."""
        row = hooks.next_row(self)
        if row is not None:
            return str(row["device_id"])
        if not self.device_ids:
            self.discover()
        aside = fleet_cache(self.environment).aside
        for _ in range(PICK_TRIES):
            device_id = random.choice(self.device_ids) if self.device_ids else None
            if device_id not in aside:
                return device_id
        return next((d for d in self.device_ids if d not in aside), device_id)

    def _forget_if_gone(self, device_id: str) -> None:
        if isinstance(self.client.last_error, DeviceNotFound) and device_id in self.device_ids:
            self.device_ids.remove(device_id)
            fleet_cache(self.environment).forget(device_id)

    def do_telemetry(self) -> None:
        device_id = self.pick_device()
        if device_id is not None:
            self.client.telemetry(device_id)
            self._forget_if_gone(device_id)

    def do_summary(self) -> None:
        self.client.summary(self.expect_devices)

    def do_alerts(self) -> None:
        device_id = self.pick_device()
        if device_id is not None:
            self.client.alerts(device_id)
            self._forget_if_gone(device_id)

    def do_action(self) -> None:
        device_id = self.pick_device()
        if device_id is not None:
            self.client.action(device_id, self.action_name, self.action_params)
            self._forget_if_gone(device_id)

    def next_kind(self) -> str:
        """The next request's kind, drawn at random by the mix's weights."""
        names = [n for n in TASK_NAMES if self.mix.get(n)]
        return random.choices(names, weights=[self.mix[n] for n in names])[0]

    @task
    def step(self) -> None:
        getattr(self, f"do_{self.next_kind()}")()
