"""State that swarmgauge's modules keep per Locust ``Environment``, held beside it instead of set on it.

Locust's ``Environment`` declares its attributes; ours (a run's folder, its step clock, its SLO verdicts) live in a
table keyed weakly by the Environment, one named slot per module. The Environment stays the composition root, a
second Environment in the same process (a test, a web-UI restart) gets slots of its own, and a type checker sees
every Environment attribute that is read.
"""

from __future__ import annotations

import argparse
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_SLOTS: dict[int, tuple[Any, dict[str, Any]]] = {}


def _forget(key: int) -> None:
    _SLOTS.pop(key, None)


def _find(environment: Any) -> dict[str, Any] | None:
    entry = _SLOTS.get(id(environment))
    if entry is None:
        return None
    holder, slots = entry
    target = holder() if isinstance(holder, weakref.ref) else holder
    return slots if target is environment else None


def _slots(environment: Any) -> dict[str, Any]:
    """The slots of ``environment``, keyed by identity: weakly where the object allows it (a Locust Environment),
    strongly otherwise (a stand-in such as a ``SimpleNamespace`` in a test, which lives as long as the process)."""
    found = _find(environment)
    if found is not None:
        return found
    slots: dict[str, Any] = {}
    try:
        holder: Any = weakref.ref(environment)
        weakref.finalize(environment, _forget, id(environment))
    except TypeError:
        holder = environment
    _SLOTS[id(environment)] = (holder, slots)
    return slots


def slot(environment: Any, name: str, factory: Callable[[], T]) -> T:
    """The value in ``name``, made by ``factory`` the first time it is asked for.

    Every request reads a slot (the steps listener's), so the common case - the slot is there - is one lookup."""
    entry = _SLOTS.get(id(environment))
    if entry is not None:
        holder, found = entry
        if (holder() if type(holder) is weakref.ref else holder) is environment and name in found:
            hit: T = found[name]
            return hit
    slots = _slots(environment)
    if name not in slots:
        slots[name] = factory()
    value: T = slots[name]
    return value


def get(environment: Any, name: str, default: Any = None) -> Any:
    """The value in ``name``, or ``default`` when nothing was put there."""
    found = _find(environment)
    return default if found is None else found.get(name, default)


def put(environment: Any, name: str, value: Any) -> None:
    _slots(environment)[name] = value


def pop(environment: Any, name: str, default: Any = None) -> Any:
    """Take the value out of ``name`` (``default`` when empty)."""
    return _slots(environment).pop(name, default)


def options(environment: Any) -> argparse.Namespace:
    """The parsed command line, or an empty one for an Environment made without it (a library user's own)."""
    parsed = getattr(environment, "parsed_options", None)
    return parsed if parsed is not None else argparse.Namespace()
