"""The one place that reaches into Locust's internals; ``tests/core/test_locust_compat.py`` checks each.

When a Locust upgrade renames or removes one of these, those tests fail by name instead of a run misbehaving.
The ``locust`` upper bound in ``pyproject.toml`` keeps an unchecked version from being installed: everything here
was read against and fits Locust 2.43.4 to 2.47.x.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gevent
from locust import User, argument_parser
from locust.runners import STATE_MISSING, WorkerRunner
from locust.user.task import DefaultTaskSet, TaskSet
from locust.user.users import LOCUST_STATE_STOPPING, LOCUST_STATE_WAITING

from swarmgauge.core.sleep_wheel import wheel

#: Locust's attributes used here, by object, so the tests can check every one is still there.
PRIVATE_ATTRIBUTES = {
    "locust.argument_parser": ("default_args_dict",),
    "Runner": ("custom_messages", "shape_greenlet", "shape_last_tick"),
    "MasterRunner": ("clients",),
    "WorkerRunner": ("_send_stats",),
    "WorkerNode": ("id", "state"),
    "locust.runners": ("STATE_MISSING",),
    "StatsEntry": ("num_reqs_per_sec", "num_fail_per_sec"),
    "RequestStats": ("history",),
    "TaskSet": ("_sleep",),
}

#: Seconds of per-second request counts kept per stats entry: Locust's current RPS reads the last 12.
PER_SECOND_KEPT = 60
#: ``RequestStats.history`` rows (one per 5 s) kept at full resolution; older rows are thinned to stay under this.
HISTORY_KEPT = 240


def cache_default_args() -> None:
    """Build Locust's default-options dict once per worker process instead of once per option per message.

    Locust's worker rebuilds a whole argument parser for every option of every ``spawn`` message it handles,
    which holds the event loop for about half a second at each step change; requests in flight then look that much
    slower. The dict only answers "is this a default option?", so one copy per process serves every message.
    """
    build: Callable[[], dict[str, Any]] = argument_parser.default_args_dict
    if getattr(build, "swarmgauge_cached", False):
        return
    cached: dict[str, Any] = {}

    def default_args_dict() -> dict[str, Any]:
        if not cached:
            cached.update(build())
        return dict(cached)

    default_args_dict.swarmgauge_cached = True  # type: ignore[attr-defined]
    argument_parser.default_args_dict = default_args_dict


def attach_worker_runner_early() -> None:
    """Make a worker the environment's runner before it connects to its master, not after.

    ``WorkerRunner.__init__`` waits in ``connect_to_master`` for the master's ack while its message loop already
    runs, and a master that is running a test sends a joining worker its spawn right after the ack: ``test_start``
    then fires before ``Environment`` has assigned ``runner``. Every listener that asks "is this a worker?" read
    no, and a worker joining mid-run (a restarted or replacement worker) opened a run folder of its own in the
    master's ``--run-dir`` and moved ``latest`` to it. ``_create_runner`` checks for an existing runner before it
    constructs one and assigns the same object after, so setting it earlier changes nothing else.
    """
    connect: Callable[[Any], Any] = WorkerRunner.connect_to_master
    if getattr(connect, "swarmgauge_early_runner", False):
        return

    def connect_to_master(self: Any) -> Any:
        if self.environment.runner is None:
            self.environment.runner = self
        return connect(self)

    connect_to_master.swarmgauge_early_runner = True  # type: ignore[attr-defined]
    WorkerRunner.connect_to_master = connect_to_master  # type: ignore[method-assign]


def set_option_help(parser: Any, option: str, text: str) -> None:
    """Replace the ``--help`` text of an option Locust declared (argparse keeps no public setter); a renamed option
    fails here by name (``KeyError``) instead of the help going stale."""
    parser._option_string_actions[option].help = text


def has_message_handler(runner: Any, message_type: str) -> bool:
    """Whether ``runner`` already handles custom messages of ``message_type`` (Locust keeps no public query)."""
    return message_type in getattr(runner, "custom_messages", {})


def send_worker_stats_now(runner: Any) -> None:
    """A worker's Locust stats sent at once, as its 3 s reporter does: the master's quit waits only 0.5 s for the
    last ones, which a loaded machine can miss, so a worker sends them with its last per-step figures."""
    runner._send_stats()


def _worker_nodes(runner: Any) -> list[Any]:
    """The master's table of worker nodes (``MasterRunner.clients``, a ``WorkerNodes``; undocumented)."""
    return list(runner.clients.values())


def live_worker_ids(runner: Any) -> list[str]:
    """The ids of the workers the master has not marked missing, sorted."""
    return sorted(str(node.id) for node in _worker_nodes(runner) if node.state != STATE_MISSING)


def missing_worker_ids(runner: Any) -> list[str]:
    """The ids of the workers the master marked missing (no heartbeat)."""
    return [str(node.id) for node in _worker_nodes(runner) if node.state == STATE_MISSING]


def prune_per_second_counts(stats: Any, keep: int = PER_SECOND_KEPT) -> int:
    """Drop per-second request and failure counts older than ``keep`` seconds; returns how many went.

    Locust keeps ``StatsEntry.num_reqs_per_sec``/``num_fail_per_sec`` (one key per second, for the whole run) but
    reads only the last 12 s of them (``current_rps``, ``current_fail_per_sec``); on a master or a local run they
    are the generator's memory growing without bound. The cut is relative to the last request Locust saw, the
    same clock those readers use.
    """
    last = stats.last_request_timestamp
    if last is None:
        return 0
    oldest = int(last) - keep
    dropped = 0
    for entry in [stats.total, *stats.entries.values()]:
        for counts in (entry.num_reqs_per_sec, entry.num_fail_per_sec):
            old = [second for second in counts if second < oldest]
            for second in old:
                del counts[second]
            dropped += len(old)
    return dropped


def thin_history(stats: Any, keep: int = HISTORY_KEPT) -> int:
    """Keep ``RequestStats.history`` (the web UI's and the HTML report's charts) under ``keep`` rows.

    Once full, every other row of the older half goes: the chart still spans the whole run, the recent part at
    Locust's 5 s and older parts coarser, and the list stays bounded. Returns how many rows went.
    """
    history = stats.history
    if len(history) < keep:
        return 0
    half = len(history) // 2
    before = len(history)
    history[:half] = history[:half:2]
    return before - len(history)


class RequestAdjustment:
    """``events.request.fire(**kwargs)`` passing its kwargs through ``adjust`` first (in place), while engaged.

    Locust's ``HttpSession`` and ``FastHttpSession`` fire the Environment's own ``events.request`` hook (they are
    built with ``request_event=environment.events.request``), as do ``measure()`` and ``EventHook.measure``; so
    wrapping that one instance's ``fire`` reaches every request before any listener, Locust's statistics included.
    Engaged only while there is something to adjust: the wrapper is a Python call and a repacking of the keywords on
    every request, which a run with nothing to adjust (a closed model, nearly every run) need not pay.
    """

    __slots__ = ("__weakref__", "_fire", "_hook", "_own_fire")

    def __init__(self, events: Any, adjust: Callable[[dict[str, Any]], None]) -> None:
        self._hook = hook = events.request
        self._own_fire = hook.__dict__.get("fire")  # a wrapper someone else put on this instance, restored at release
        original = hook.fire

        def fire(**kwargs: Any) -> None:  # ``reverse`` rides in kwargs: one repacking per request, not two
            adjust(kwargs)
            original(**kwargs)

        fire.__wrapped__ = original  # type: ignore[attr-defined]
        self._fire = fire

    @property
    def engaged(self) -> bool:
        return self._hook.__dict__.get("fire") is self._fire

    def engage(self) -> None:
        self._hook.fire = self._fire

    def release(self) -> None:
        if not self.engaged:
            return
        if self._own_fire is None:
            del self._hook.fire  # the class's own method again
        else:
            self._hook.fire = self._own_fire


def request_adjustment(events: Any, adjust: Callable[[dict[str, Any]], None]) -> RequestAdjustment:
    """The one :class:`RequestAdjustment` of ``events`` (made with ``adjust`` on first call, not engaged)."""
    hook = events.request
    found = hook.__dict__.get("swarmgauge_adjustment")
    if found is None:
        found = hook.swarmgauge_adjustment = RequestAdjustment(events, adjust)
    return found


#: ``run_task(taskset, execute, task)``: runs one iteration by calling ``execute(taskset, task)``.
RunTask = Callable[[Any, Callable[[Any, Any], None], Any], None]
#: ``sleep_for(taskset, seconds)``: what Locust's ``wait()`` sleeps instead of ``seconds`` (None: no sleep at all).
SleepFor = Callable[[Any, float], "float | None"]


class TaskRouting:
    """Every task iteration of every User through ``run_task``, and Locust's wait through ``sleep_for``, while engaged;
    released, Locust's own ``execute_task`` and a wait that goes straight to :func:`sleep_on_timer`.

    An iteration is one task that is a function or method (``TaskSet.execute_task`` and ``DefaultTaskSet``'s own,
    which Locust's ``TaskSet.run`` loop calls once per task); a nested ``TaskSet`` class is no iteration (its tasks
    are). ``TaskSet.wait`` sleeps ``self._sleep(self.wait_time())``: ``_sleep`` is the one seam between what the
    User's ``wait_time`` asked and the sleep. Engaged only while something needs it (the routing is two Python calls
    per iteration a closed-model run need not pay); the swap is of class attributes, so an iteration already running
    finishes in the one it began in, and a release gives back what engaging found (Locust's own or another wrapper).
    """

    def __init__(self, run_task: RunTask, sleep_for: SleepFor) -> None:
        self._run_task = run_task
        original_sleep = TaskSet.__dict__["_sleep"]

        def routed_sleep(self: Any, seconds: float) -> None:
            chosen = sleep_for(self, seconds)
            if chosen is not None:
                sleep_on_timer(chosen)

        def timer_sleep(_self: Any, seconds: float) -> None:
            sleep_on_timer(seconds)

        sleeps: tuple[Any, ...] = (routed_sleep, timer_sleep)
        for sleep in sleeps:
            sleep.__wrapped__ = original_sleep
            sleep.swarmgauge_routing = self
        self._routed: dict[tuple[type, str], Callable[..., None]] = {(TaskSet, "_sleep"): routed_sleep}
        self._given_back: dict[tuple[type, str], Any] = {}
        TaskSet._sleep = timer_sleep  # type: ignore[method-assign]

    @property
    def engaged(self) -> bool:
        return all(owner.__dict__.get(name) is routed for (owner, name), routed in self._routed.items())

    def engage(self) -> None:
        if self.engaged:
            return
        for owner in (TaskSet, DefaultTaskSet):
            found = owner.__dict__["execute_task"]
            if found is not self._routed.get((owner, "execute_task")):
                self._routed[owner, "execute_task"] = _routed_execute_task(found, self._run_task)
        for (holder, name), routed in self._routed.items():
            found = holder.__dict__.get(name)
            if found is not routed:
                self._given_back[holder, name] = found
                setattr(holder, name, routed)

    def release(self) -> None:
        for (owner, name), routed in self._routed.items():
            if owner.__dict__.get(name) is routed and (owner, name) in self._given_back:
                setattr(owner, name, self._given_back.pop((owner, name)))


def route_task_iterations(run_task: RunTask, sleep_for: SleepFor) -> TaskRouting:
    """This process's one :class:`TaskRouting` (made with these callbacks on first call, released: Locust's own
    task loop, its wait on the timer)."""
    found = getattr(TaskSet.__dict__["_sleep"], "swarmgauge_routing", None)
    return found if found is not None else TaskRouting(run_task, sleep_for)


def sleep_on_timer(seconds: float) -> None:
    """``gevent.sleep(seconds)`` (Locust's ``TaskSet._sleep``) with less kept while a user sleeps between tasks.

    ``gevent.sleep`` waits in ``hub.wait``, through a ``Waiter`` and a timer of its own: a paced user's greenlet,
    asleep nearly all the run, keeps them and a saved C stack one Cython frame deeper, ~1 KiB a user at 1,000 users
    (``benchmarks/results/mark_user_memory_p34.md``). Here it waits in its hub's :class:`SleepWheel`, one timer for
    all; a kill still raises in it, and any other switch in is refused as gevent's own wait refuses it.
    """
    if seconds <= 0:
        gevent.sleep(seconds)
        return
    wheel().sleep(seconds)


def _routed_execute_task(original: Callable[[Any, Any], None], run_task: RunTask) -> Callable[[Any, Any], None]:
    def execute_task(self: Any, task: Any) -> None:
        if isinstance(task, type) and issubclass(task, TaskSet):
            original(self, task)
        else:
            run_task(self, original, task)

    execute_task.__wrapped__ = original  # type: ignore[attr-defined]
    return execute_task


def runs_its_tasks(user_class: type) -> bool:
    """Whether Locust's own ``User.run`` (its ``DefaultTaskSet`` loop) runs this class, so every iteration goes
    through :func:`route_task_iterations`; a class with its own ``run`` (``PytestUser``) never does."""
    return getattr(user_class, "run", None) is User.run


def stop_shape_worker(runner: Any) -> None:
    """End the greenlet that ticks the shape (``Runner.shape_greenlet``) and forget its last tick, leaving the users
    running: what ``Runner.stop`` does to the shape, without stopping the users (an EDIT taking over a plan)."""
    worker = getattr(runner, "shape_greenlet", None)
    if worker is not None:
        worker.kill(block=True)
    runner.shape_greenlet = None
    runner.shape_last_tick = None


class UnsetSeconds(float):
    """Locust's ``--stop-timeout`` default (0 s), marked as not given: a default of swarmgauge's own may replace it,
    while a ``--stop-timeout 0`` the user gave (command line, ``LOCUST_STOP_TIMEOUT``, config file) is kept as 0.
    argparse passes a non-string default through untouched, and ``float()`` of it is a plain 0.0 for Locust."""


def mark_stop_timeout_unset(parser: Any) -> None:
    parser.set_defaults(stop_timeout=UnsetSeconds(0.0))


def default_stop_timeout(environment: Any, seconds: float) -> None:
    """Give stopped users ``seconds`` to finish, unless the user set ``--stop-timeout``; the longest default wins."""
    options = getattr(environment, "parsed_options", None)
    given = options is not None and not isinstance(getattr(options, "stop_timeout", None), UnsetSeconds)
    if not given:
        environment.stop_timeout = max(float(environment.stop_timeout or 0.0), seconds)


def stop_waiting_users_between_tasks() -> None:
    """A waiting user that is stopped starts no new task, even when its wake-up beats the kill.

    Locust's ``User.stop`` kills a user that is in its wait at once, but gevent delivers the kill in a later loop
    callback: when the wait's timer fires in the same loop turn, the user wakes first, starts its next task, and the
    kill lands inside that task's request, which is recorded as unfinished although nothing was in flight when the
    stop came. Marking the user stopping before the kill makes ``TaskSet.wait`` raise ``StopUser`` on wake-up.
    """
    stop: Callable[..., Any] = User.stop
    if getattr(stop, "swarmgauge_stops_waiting", False):
        return

    def stop_user(self: Any, force: bool = False) -> Any:
        if self._state == LOCUST_STATE_WAITING:
            self._state = LOCUST_STATE_STOPPING
            self._group.killone(self._greenlet)
            return True
        return stop(self, force)

    stop_user.swarmgauge_stops_waiting = True  # type: ignore[attr-defined]
    User.stop = stop_user  # type: ignore[method-assign]
