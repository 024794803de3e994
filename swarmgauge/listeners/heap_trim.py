"""Hands the free pages inside glibc's malloc heap back to the OS (``malloc_trim``), a few times a minute at most.

A soak showed what is left of the generator's growth once nothing grows without bound: glibc's heap, not live
objects. Over six minutes the heap grew by 4 MiB while the memory in use in it grew by 0.8 MiB; the rest was free
chunks between live ones, which glibc only returns to the OS from the top of the heap. ``malloc_trim(0)`` also
releases whole free pages from the middle. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def trim_malloc_heap() -> bool | None:
    """Release the heap's free pages; True if some went back, False if none, None where there is no glibc."""
    trim = _malloc_trim()
    return None if trim is None else bool(trim(0))
