"""The one place that reaches into Locust's internals; ``tests/swarmgauge/test_locust_compat.py`` checks each one.

When a Locust upgrade renames or removes one of these, those tests fail by name instead of a run misbehaving.
The ``locust`` upper bound in ``pyproject.toml`` keeps an unchecked version from being installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from locust import argument_parser
from locust.runners import STATE_MISSING

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


def stop_shape_worker(runner: Any) -> None:
    """End the greenlet that ticks the shape (``Runner.shape_greenlet``) and forget its last tick, leaving the users
    running: what ``Runner.stop`` does to the shape, without stopping the users (an EDIT taking over a plan)."""
    worker = getattr(runner, "shape_greenlet", None)
    if worker is not None:
        worker.kill(block=True)
    runner.shape_greenlet = None
    runner.shape_last_tick = None
