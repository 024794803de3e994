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
    "Runner": ("custom_messages",),
    "MasterRunner": ("clients",),
    "WorkerNode": ("id", "state"),
    "locust.runners": ("STATE_MISSING",),
}


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


def has_message_handler(runner: Any, message_type: str) -> bool:
    """Whether ``runner`` already handles custom messages of ``message_type`` (Locust keeps no public query)."""
    return message_type in getattr(runner, "custom_messages", {})


def _worker_nodes(runner: Any) -> list[Any]:
    """The master's table of worker nodes (``MasterRunner.clients``, a ``WorkerNodes``; undocumented)."""
    return list(runner.clients.values())


def live_worker_ids(runner: Any) -> list[str]:
    """The ids of the workers the master has not marked missing, sorted."""
    return sorted(str(node.id) for node in _worker_nodes(runner) if node.state != STATE_MISSING)


def missing_worker_ids(runner: Any) -> list[str]:
    """The ids of the workers the master marked missing (no heartbeat)."""
    return [str(node.id) for node in _worker_nodes(runner) if node.state == STATE_MISSING]
