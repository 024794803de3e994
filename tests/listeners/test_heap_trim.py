"""The heap trim runs where glibc has ``malloc_trim`` and is a no-op everywhere else (no memory figure asserted)."""

import ctypes.util
import platform

import pytest

from swarmgauge.listeners import heap_trim


@pytest.fixture(autouse=True)
def fresh_lookup():
    heap_trim._malloc_trim.cache_clear()
    yield
    heap_trim._malloc_trim.cache_clear()


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_on_glibc_the_trim_runs_and_says_whether_pages_went_back():
    chunks = [bytearray(64 * 1024) for _ in range(200)]
    del chunks[::2]
    assert heap_trim.trim_malloc_heap() in (True, False)


def test_without_a_c_library_the_trim_does_nothing(monkeypatch):
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert heap_trim.trim_malloc_heap() is None


def test_a_c_library_without_malloc_trim_does_nothing(monkeypatch):
    class NoTrim:
        def __init__(self, name):
            pass

    monkeypatch.setattr(heap_trim.ctypes, "CDLL", NoTrim)
    assert heap_trim.trim_malloc_heap() is None
