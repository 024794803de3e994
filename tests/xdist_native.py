"""pytest-xdist under gevent's monkey patching: the worker's execnet primitives on native threads again.

An xdist worker waits for its next test on an Event of execnet's that execnet's reader thread sets. That thread is
a native one, started before ``import locust`` patched ``threading``; an Event or RLock made after the patch is
gevent's, which a native thread cannot wake (the worker dies with ``LoopExit``). So in a worker, execnet's
thread model hands out primitives built on the unpatched ``_thread`` locks.
"""

from __future__ import annotations

import os

from gevent.monkey import get_original

_allocate_lock = get_original("_thread", "allocate_lock")
_NativeRLock = get_original("_thread", "RLock")


class NativeEvent:
    """``threading.Event``'s contract on native locks: ``_gate`` is held exactly while the flag is clear."""

    def __init__(self) -> None:
        self._mutex = _allocate_lock()
        self._gate = _allocate_lock()
        self._gate.acquire()
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        with self._mutex:
            if not self._flag:
                self._flag = True
                self._gate.release()

    def clear(self) -> None:
        with self._mutex:
            if self._flag:
                self._flag = False
                self._gate.acquire()

    def wait(self, timeout: float | None = None) -> bool:
        if self._gate.acquire(timeout=-1 if timeout is None else timeout):
            self._gate.release()
            return True
        return self._flag


def keep_execnet_native() -> None:
    """In an xdist worker only (``PYTEST_XDIST_WORKER``): execnet's thread models make native Events and RLocks."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    from execnet import gateway_base

    model = gateway_base.ThreadExecModel
    model.Event = lambda self: NativeEvent()
    model.RLock = lambda self: _NativeRLock()
    model.Lock = lambda self: _NativeRLock()
