"""A FAKE ``gevent`` for one module under test: only its ``gevent.sleep`` is replaced.

Patching ``gevent.sleep`` itself (``monkeypatch.setattr(module.gevent, "sleep", ...)`` reaches the real module) made
every greenlet in the process spin: in CI a user another test left running starved the hub, and the fake server's
answer came after the client's 10 s timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace


def module_sleeps(sleep: Callable[[float], object]) -> SimpleNamespace:
    """Set as the module's ``gevent``: its ``gevent.sleep(seconds)`` calls ``sleep(seconds)`` and nothing else."""
    return SimpleNamespace(sleep=lambda seconds=0: sleep(seconds))
